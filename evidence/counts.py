"""What instruction counts say, and where they and time disagree (docs/methodology.md §11).

For a campaign that counted instructions (`run --metric instructions` or a budget with metric =
"instructions"): per cell, how far its process executions' steady counts lie apart (the largest over the
smallest, minus 1: 0 is the same count every time), its class, and its most deviant iteration (the largest
count over its execution's median). With a timed campaign of the same study
(`--timed`, from this store or `--timed-store`): per cell, the ratio to the baseline in counts beside the
ratio in time, how far they disagree (count ratio over time ratio), and Spearman's rank correlation of the
two over every cell with both, so a user can see when counts may stand in for time.

    .venv/bin/python evidence/counts.py STORE --counted 3 [--timed 4] [--timed-store OTHER.sqlite]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from bridgebench.instructions import INSTRUCTIONS
from bridgebench.report import markdown
from bridgebench.store import Store
from bridgebench.timing import time_beside_counts
from bridgebench.timing.analysis import current_analysis
from bridgebench.timing.report import tables
from bridgebench.timing.result import Analysis, Cell


def spread(cell: Cell) -> float | None:
    """The executions' steady counts: largest over smallest, minus 1."""
    means = [r.steady_mean for r in cell.per_execution if r.steady_mean]
    return max(means) / min(means) - 1 if len(means) > 1 else None


def worst_iteration(cell: Cell, counts: dict[tuple[int, str], np.ndarray]) -> float | None:
    """The cell's most deviant iteration: over its executions, the largest count over that execution's median
    (1: no iteration above the median; one far-off iteration moves a mean, not the median)."""
    ratios = [float(a.max() / np.median(a)) for r in cell.per_execution
              if (a := counts.get((r.execution_id, INSTRUCTIONS))) is not None and a.size and np.median(a) > 0]
    return max(ratios) if ratios else None


def spreads(counted: Analysis, store: Store) -> None:
    ids = [r.execution_id for c in counted.cells for r in c.per_execution]
    counts = store.series(ids, (INSTRUCTIONS,))
    print("| Benchmark | Mechanism | Executions | Class | Steady count | Spread between executions | "
          "Worst iteration / median |")
    print("|---|---|---|---|---|---|---|")
    worst: dict[str, float] = {}
    for c in counted.cells:
        s = spread(c)
        perf = c.steady_performance
        shown = f"{perf.value * 1e9:,.0f} Ir" if perf else "—"
        print(f"| {c.benchmark} | {c.mechanism} | {c.executions_ok} | {c.classification or '—'} | {shown} | "
              f"{'—' if s is None else f'{s:.4%}'} | {fmt_ratio(worst_iteration(c, counts))} |")
        if s is not None:
            worst[c.mechanism] = max(worst.get(c.mechanism, 0.0), s)
    print()
    for mechanism, s in worst.items():
        print(f"{mechanism}: executions of one cell at most {s:.4%} apart")


def fmt_ratio(r: float | None) -> str:
    return "—" if r is None else f"×{r:.3g}"


def versus_time(counted: Analysis, timed: Analysis) -> None:
    """The report's "counts beside time" (time_beside_counts.py) for this pair of campaigns, then per mechanism."""
    both = time_beside_counts.pair(counted, timed)
    shown = replace(counted, beside_time=both)
    print()
    print("\n".join(markdown.table(tables.BESIDE_COLUMNS, tables.beside_rows(shown))))
    print(tables.beside_line(shown))
    for mechanism in sorted({p.mechanism for p in both.pairs}):
        mine = tuple(p for p in both.pairs if p.mechanism == mechanism)
        print(f"{mechanism}, {len(mine)} cells: {tables.agreement(time_beside_counts.of_pairs(timed, mine))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--counted", type=int, required=True, help="the campaign that counted instructions")
    parser.add_argument("--timed", type=int, help="a timed campaign of the same study, to compare with")
    parser.add_argument("--timed-store", type=Path, help="where the timed campaign is (default: STORE)")
    args = parser.parse_args()
    store = Store(args.store, create=False)
    counted = current_analysis(store, args.counted)
    if counted.metric != INSTRUCTIONS:
        print(f"campaign {args.counted} measured {counted.metric}, not instructions", file=sys.stderr)
        return 2
    spreads(counted, store)
    if args.timed is not None:
        timed = current_analysis(Store(args.timed_store or args.store, create=False), args.timed)
        if timed.metric == INSTRUCTIONS or timed.campaign.study != counted.campaign.study:
            print(f"campaign {args.timed} is not a timed campaign of {counted.campaign.study}", file=sys.stderr)
            return 2
        versus_time(counted, timed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
