"""What instruction counts say, and where they and time disagree (docs/methodology.md §11).

For a campaign that counted instructions (`run --metric instructions` or a budget with metric =
"instructions"): per cell, how far its process executions' steady counts lie apart (the largest over the
smallest, minus 1: 0 is the same count every time), and its class. With a timed campaign of the same study
(`--timed`, from this store or `--timed-store`): per cell, the ratio to the baseline in counts beside the
ratio in time, how far they disagree (count ratio over time ratio), and Spearman's rank correlation of the
two over every cell with both, so a user can see when counts may stand in for time.

    .venv/bin/python benchmarks/counts.py STORE --counted 3 [--timed 4] [--timed-store OTHER.sqlite]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from scipy.stats import spearmanr

from bridgebench.analysis import current_analysis
from bridgebench.counting import INSTRUCTIONS
from bridgebench.result import Analysis, Cell
from bridgebench.store import Store


def spread(cell: Cell) -> float | None:
    """The executions' steady counts: largest over smallest, minus 1."""
    means = [r.steady_mean for r in cell.per_execution if r.steady_mean]
    return max(means) / min(means) - 1 if len(means) > 1 else None


def spreads(counted: Analysis) -> None:
    print("| Benchmark | Mechanism | Executions | Class | Steady count | Spread between executions |")
    print("|---|---|---|---|---|---|")
    worst: dict[str, float] = {}
    for c in counted.cells:
        s = spread(c)
        perf = c.steady_performance
        shown = f"{perf.value * 1e9:,.0f} Ir" if perf else "—"
        print(f"| {c.benchmark} | {c.mechanism} | {c.executions_ok} | {c.classification or '—'} | {shown} | "
              f"{'—' if s is None else f'{s:.4%}'} |")
        if s is not None:
            worst[c.mechanism] = max(worst.get(c.mechanism, 0.0), s)
    print()
    for mechanism, s in worst.items():
        print(f"{mechanism}: executions of one cell at most {s:.4%} apart")


def versus_time(counted: Analysis, timed: Analysis) -> None:
    print("\n| Benchmark | Mechanism | Count ratio | Time ratio | Count / time |")
    print("|---|---|---|---|---|")
    pairs = []
    by_mechanism: dict[str, list[tuple[float, float]]] = {}
    for c in counted.cells:
        t = timed.cell(c.benchmark, c.mechanism)
        if c.mechanism == counted.baseline or not c.ratio or not t or not t.ratio:
            continue
        pairs.append((c.ratio.value, t.ratio.value))
        by_mechanism.setdefault(c.mechanism, []).append(pairs[-1])
        print(f"| {c.benchmark} | {c.mechanism} | ×{c.ratio.value:.4g} | ×{t.ratio.value:.4g} "
              f"({t.ratio.low:.3g}–{t.ratio.high:.3g}) | {c.ratio.value / t.ratio.value:.3g} |"
              if t.ratio.low is not None and t.ratio.high is not None else
              f"| {c.benchmark} | {c.mechanism} | ×{c.ratio.value:.4g} | ×{t.ratio.value:.4g} | "
              f"{c.ratio.value / t.ratio.value:.3g} |")
    print()
    for name, mine in (("every mechanism", pairs), *sorted(by_mechanism.items())):
        _agreement(name, mine)


def _agreement(name: str, pairs: list[tuple[float, float]]) -> None:
    """Spearman's rank correlation of the count and time ratios, and how far their quotient lies from 1."""
    if len(pairs) < 3:
        print(f"{name}: fewer than 3 cells with both ratios, no rank correlation")
        return
    rho = spearmanr([a for a, _ in pairs], [b for _, b in pairs]).statistic
    off = sorted(abs(math.log(a / b)) for a, b in pairs)
    print(f"{name}, {len(pairs)} cells: Spearman's rank correlation of count and time ratios {rho:.3f}; "
          f"count/time differs from 1 by {math.exp(off[len(off) // 2]) - 1:.1%} at the median and "
          f"{math.exp(off[-1]) - 1:.1%} at most")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--counted", type=int, required=True, help="the campaign that counted instructions")
    parser.add_argument("--timed", type=int, help="a timed campaign of the same study, to compare with")
    parser.add_argument("--timed-store", type=Path, help="where the timed campaign is (default: STORE)")
    args = parser.parse_args()
    counted = current_analysis(Store(args.store, create=False), args.counted)
    if counted.metric != INSTRUCTIONS:
        print(f"campaign {args.counted} measured {counted.metric}, not instructions", file=sys.stderr)
        return 2
    spreads(counted)
    if args.timed is not None:
        timed = current_analysis(Store(args.timed_store or args.store, create=False), args.timed)
        if timed.metric == INSTRUCTIONS or timed.campaign.study != counted.campaign.study:
            print(f"campaign {args.timed} is not a timed campaign of {counted.campaign.study}", file=sys.stderr)
            return 2
        versus_time(counted, timed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
