"""How wide a campaign's ratios to its baseline are, per mechanism: from its JSON report (`bridgebench report
N --format json`, or the .json a run writes). For each mechanism, how many ratios have an interval, the median
and largest half-width (half the interval's log width, as a share), how many lie within ±5 %, and the range of
process executions (or lock-step blocks) they rest on. A reading of a report, not a test.

    .venv/bin/python evidence/ratio_widths.py results/lua-vms-1.json [--within 0.05]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--within", type=float, default=0.05)
    args = ap.parse_args()
    report = json.loads(args.report.read_text())
    by_mechanism: dict[str, list[dict]] = {}
    for cell in report["cells"]:
        if cell["ratio"] and cell["mechanism"] != report["baseline"]:
            by_mechanism.setdefault(cell["mechanism"], []).append(cell["ratio"])
    print(f"| mechanism | ratios with an interval | median half-width | largest | within ±{args.within:.0%} "
          "| executions or blocks |\n|---|---|---|---|---|---|")
    for mechanism, ratios in by_mechanism.items():
        widths = [math.expm1((math.log(r["high"]) - math.log(r["low"])) / 2) for r in ratios if r["low"]]
        counts = [r["executions"] for r in ratios]
        print(f"| {mechanism} | {len(widths)} of {len(ratios)} | "
              f"{statistics.median(widths):.1%} | {max(widths):.1%} | {sum(w <= args.within for w in widths)} | "
              f"{min(counts)}–{max(counts)} |" if widths else f"| {mechanism} | 0 of {len(ratios)} | — | — | 0 | — |")


if __name__ == "__main__":
    main()
