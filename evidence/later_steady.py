"""What shorter later executions would have given a lock-step campaign whose executions all ran long: each
block's ratio re-computed from the iterations a `later_steady` budget would make (its benchmark's warm-up, as
its first blocks showed it, and S more), beside the ratio from all the steady rounds, with the spread between
blocks of each, and how much faster the short blocks would narrow an interval per second of executions. A
replay of stored iterations, not a run: it reads the first blocks as such a budget would, and leaves them out.

    .venv/bin/python evidence/later_steady.py STORE CAMPAIGN [--steady 10] [--baseline luajit] [--other luajit2]

An interval over blocks narrows as sd / √k, so k blocks of t seconds each give a width that goes as
sd² · t per second of executions; the last column is that figure's ratio, long over short (above 1: the
short blocks are worth more per second). A block's seconds are both members' iterations at their median
iteration time and 0.02 s for the processes' start (what the stored blocks of lua-vms took besides).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from bridgebench.campaign.timing import later_parts
from bridgebench.store import Store
from bridgebench.timing.analysis import Series, current_analysis, first_warmup
from bridgebench.timing.result import Run

START_S = 0.02


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("campaign", type=int)
    ap.add_argument("--steady", type=int, default=10, help="S: the steady iterations after the warm-up")
    ap.add_argument("--baseline", default="luajit")
    ap.add_argument("--other", default="luajit2")
    args = ap.parse_args()
    store = Store(args.store, create=False)
    result = current_analysis(store, args.campaign)
    first = result.campaign.options["process_executions"]
    series = Series(store, result.metric)
    print(f"| benchmark | blocks replayed | warm-up | iterations | all rounds: ratio, sd between | first "
          f"{args.steady} after the warm-up: ratio, sd between | seconds a block, long → short | per second |\n"
          "|---|---|---|---|---|---|---|---|")
    for benchmark in result.benchmarks:
        a, b = result.cell(benchmark, args.baseline), result.cell(benchmark, args.other)
        if a is None or b is None:
            continue
        warm = first_warmup(store, args.campaign, benchmark, first)  # as the budget would read it
        by_block: dict[str, dict[str, Run]] = {}
        for side, cell in (("a", a), ("b", b)):
            for r in cell.per_execution:
                if r.block and r.pexec >= first:
                    by_block.setdefault(r.block, {})[side] = r
        pairs = [(v["a"], v["b"]) for v in by_block.values() if len(v) == 2]
        if warm is None or len(pairs) < 3:
            print(f"| {benchmark} | {len(pairs)} | {'—' if warm is None else warm} | — | — | — | — | — |")
            continue
        n = sum(later_parts(min(ra.iterations for ra, _ in pairs), warm, args.steady))
        full, short, per_iteration = [], [], []
        for ra, rb in pairs:
            ta, tb = series.times(ra), series.times(rb)
            both = ra.steady_mask() & rb.steady_mask()
            if both.any():
                full.append(float(np.mean(np.log(tb[both] / ta[both]))))
            short.append(float(np.mean(np.log(tb[warm:n] / ta[warm:n]))))
            per_iteration.append(float(np.median(ta)) + float(np.median(tb)))
        t_long = float(np.median(per_iteration)) * min(ra.iterations for ra, _ in pairs) + START_S
        t_short = float(np.median(per_iteration)) * n + START_S
        sd_full, sd_short = float(np.std(full, ddof=1)), float(np.std(short, ddof=1))
        gain = (sd_full ** 2 * t_long) / (sd_short ** 2 * t_short) if sd_short > 0 else math.inf
        print(f"| {benchmark} | {len(pairs)} | {warm} | {n} | ×{math.exp(np.mean(full)):.3f}, {sd_full:.2%} | "
              f"×{math.exp(np.mean(short)):.3f}, {sd_short:.2%} | {t_long:.2f} → {t_short:.2f} | ×{gain:.1f} |")


if __name__ == "__main__":
    main()
