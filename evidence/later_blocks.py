"""What leaving a campaign's first lock-step blocks out of its ratios would do: a replay of stored campaigns,
nothing is run.

    .venv/bin/python evidence/later_blocks.py STORE [STORE …]

The first blocks (rounds below the budget's process_executions) take turns by iterations even where a budget's
turn_s sizes the later ones alike, so a ratio whose sides took unlike turns only there (the report's turns note,
`tables.unlike_only_first`) carries those blocks' cost of a turn. For each such ratio: its estimate and 99 %
interval over every block beside the same over the later blocks alone (both Student's t over the blocks' log
ratios, stats.lockstep.lockstep_ratio, at 99 % without the adjustment an adaptive budget makes for its looks, so the
report's own interval can be wider; "too few" below 3 blocks), and the later estimate over the whole one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bridgebench.stats import Estimate
from bridgebench.stats.lockstep import lockstep_ratio
from bridgebench.timing.report.tables import unlike_only_first
from bridgebench.timing.stored_ratios import missing, stored_ratios


def width(e: Estimate | None) -> float | None:
    """The interval's half-width as a share of the estimate, its farther end (Estimate.reach, as a report's ±);
    None without one."""
    return None if e is None or e.reach is None else e.reach / e.value


def said(e: Estimate | None) -> str:
    w = width(e)
    return "none" if e is None else "too few" if w is None else f"×{e.value:.3f} ±{w:.1%} ({e.executions})"


def ratios(path: Path) -> list[tuple[str, str, str, Estimate, Estimate | None]]:
    """Per ratio that took unlike turns only in its first blocks, in every finished campaign of a store: where, its
    estimate over every block and over the later blocks alone."""
    out = []
    for x in stored_ratios(path, cells=unlike_only_first):
        if x.cell.ratio is None:
            continue
        later, every = x.blocks(x.first_later), x.blocks()
        if not every:
            continue
        out.append((x.where, x.cell.benchmark, x.result.label(x.cell.mechanism), lockstep_ratio(list(every.values())),
                    lockstep_ratio(list(later.values())) if later else None))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", type=Path, nargs="+")
    args = ap.parse_args()
    if error := missing(args.stores):
        print(error, file=sys.stderr)
        return 1
    found = [row for path in args.stores for row in ratios(path)]
    if not found:
        print("no ratio took unlike turns only in its first blocks", file=sys.stderr)
        return 1
    print("| campaign | benchmark | mechanism | every block (blocks) | later blocks alone (blocks) | later / every |")
    print("|---|---|---|---|---|---|")
    for where, benchmark, mechanism, every, alone in found:
        shift = f"×{alone.value / every.value:.3f}" if alone else "—"
        print(f"| {where} | {benchmark} | {mechanism} | {said(every)} | {said(alone)} | {shift} |")
    both = [(width(every), width(alone)) for *_, every, alone in found]
    wider = sum(1 for w, v in both if w is not None and v is not None and v > w)
    print(f"\n{len(found)} ratios; with an interval both ways {sum(1 for w, v in both if w and v)}, the later blocks' "
          f"wider on {wider}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
