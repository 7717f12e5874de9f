"""What deciding a campaign's undecided ratios would take: from its JSON report (`bridgebench report N --format
json`, or the .json a run writes), for each ratio to the baseline that is not decided, how many lock-step
blocks would decide it if its estimate and its spread between blocks stayed as they are, and about how long
those blocks would run. A projection from one campaign's figures, not a promise: the spread is itself an
estimate from a few blocks, and a ratio near the edge of the margin needs ever more of them.

    .venv/bin/python evidence/blocks_needed.py results/lua-vms-1.json [--mechanism luajit2]

The rule is question.blocks_to_decide: the report's rule (question.answer) at the confidence each interval
was computed at, Student's t over blocks.
An estimate halfway to the margin's edge is as far from either answer as it can be, and needs the most
blocks. A block's seconds: each member's iterations times its
steady time per iteration, the mean over the blocks it ran (start-up and warm-up left out, so a lower bound).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bridgebench import question
from bridgebench.stats import Estimate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--mechanism", help="only this mechanism's ratios (default: all but the baseline)")
    args = ap.parse_args()
    report = json.loads(args.report.read_text())
    margin, baseline = report["equivalence"], report["baseline"]
    cells = {(c["benchmark"], c["mechanism"]): c for c in report["cells"]}

    def seconds_a_block(cell: dict) -> float:
        runs = [r for r in cell["per_execution"] if r["steady_mean"]]
        return sum(r["iterations"] * r["steady_mean"] for r in runs) / max(len(runs), 1)

    print("| benchmark | mechanism | blocks | ratio (interval) | sd between blocks | more blocks would say | blocks "
          "it would take | seconds a block (at least) | seconds it would take |\n|---|---|---|---|---|---|---|---|---|")
    for (benchmark, mechanism), cell in cells.items():
        ratio = cell.get("ratio")
        if mechanism == baseline or not ratio or (args.mechanism and mechanism != args.mechanism):
            continue
        if question.answer(Estimate(**ratio), margin).state in question.DECIDED or cell["ratio_between_sd"] is None:
            continue
        target, n = question.blocks_to_decide(ratio["value"], cell["ratio_between_sd"], ratio["confidence"], margin)
        block_s = seconds_a_block(cell) + seconds_a_block(cells[(benchmark, baseline)])
        print(f"| {benchmark} | {mechanism} | {ratio['executions']} | {ratio['value']:.3f} ({ratio['low']:.3f}–"
              f"{ratio['high']:.3f}) | {cell['ratio_between_sd']:.2%} | {target} | {n if n else 'none'} | "
              f"{block_s:.2f} | {f'{n * block_s:.0f}' if n else '—'} |")


if __name__ == "__main__":
    main()
