"""What the later blocks' leads cost, and what a lead that two blocks must agree on would change: a replay of
stored lock-step campaigns of a `later_steady` budget (lua-vms's default), nothing is run.

    .venv/bin/python evidence/leads.py STORE [STORE …] [--steady 10]

A later execution of a classified cell (a JIT's) makes its benchmark's warm-up first, unpaired (its lead), then
`later_steady` iterations in turns (campaign/timing.py later_parts). The warm-up is the longest any of the
benchmark's first executions took (analysis.first_warmup), so one execution whose series stepped late sets the
lead of every later one; on this VM the host's speed steps make such steps in executions that never warmed up.
The rule replayed here takes the longest warm-up that executions of two or more of the first blocks reached
(the second longest of the blocks' longest), so that one block's step does not set it, and a warm-up that
processes of one VM share still does.

Per benchmark: the first blocks' warm-ups (each block's longest), the lead each rule gives, the later
executions' seconds in their leads and what the shorter lead would have saved of them; and what the shorter
lead would cost: each first execution of a mechanism cut to the later executions' shape under the shorter lead
(from that lead, `--steady` iterations) against the same under the longest (from there, as many), as the mean log
difference over the mechanism's classified first executions. That is how far the mechanism's later steady means
would move, and the ratio column is the difference between the two mechanisms' moves: the bias the shorter lead
would put into their ratio. Host steps put noise into both readings, not a direction: the last line reads it, the
same difference between the `--steady` iterations after the longest warm-up and the `--steady` after those.
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from bridgebench.stats.classify import FLAT, WARMUP
from bridgebench.store import Store
from bridgebench.timing.analysis import Series, current_analysis, first_warmup
from bridgebench.timing.result import Run


def block_warmups(firsts: list[Run]) -> list[int]:
    """Each first block's longest warm-up (its flat or warming-up executions'), longest first; an execution that
    ran alone counts as a block of its own."""
    by_block: dict[str, int] = {}
    for r in firsts:
        if r.kind in (FLAT, WARMUP) and r.steady_iteration is not None:
            key = r.block or f"alone {r.execution_id}"
            by_block[key] = max(by_block.get(key, 0), r.steady_iteration - 1)
    return sorted(by_block.values(), reverse=True)


def two_block_lead(firsts: list[Run]) -> int | None:
    """The longest warm-up that first executions of two or more blocks reached: the second longest of the blocks'
    (block_warmups; the longest when there is one block)."""
    longest = block_warmups(firsts)
    return longest[1] if len(longest) > 1 else (longest[0] if longest else None)


def move(times: np.ndarray, shorter: int, longest: int, steady: int) -> float:
    """How far a first execution's mean over [shorter, shorter + steady) lies from its mean over [longest,
    longest + steady) (log): what the shorter lead would move a later execution's steady mean like it by."""
    if shorter == longest:
        return 0.0
    return float(np.mean(np.log(times[shorter:shorter + steady])) - np.mean(np.log(times[longest:longest + steady])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", type=Path, nargs="+")
    ap.add_argument("--steady", type=int, default=10, help="the later executions' steady iterations (later_steady)")
    args = ap.parse_args()
    totals: dict[str, float] = defaultdict(float)
    ratio_moves: list[float] = []  # where the two rules differ: how far the shorter lead would move the ratio
    noise: list[float] = []  # and how far the next window on would, with no warm-up in either
    for path in args.stores:
        store = Store(path, create=False)
        for campaign in store.campaigns():
            result = current_analysis(store, campaign.id)
            first = result.campaign.options["process_executions"]
            series = Series(store, result.metric)
            print(f"\n{path.name}, campaign {campaign.id}\n\n| benchmark | first blocks' warm-ups | lead: longest | "
                  "two blocks | later JIT s | in leads | saved | moves (first executions) | ratio |\n"
                  "|---|---|---|---|---|---|---|---|---|")
            for benchmark in result.benchmarks:
                cells = [c for c in result.cells if c.benchmark == benchmark
                         and any(r.kind is not None for r in c.per_execution if r.pexec < first)]
                firsts = [r for c in cells for r in c.per_execution if r.pexec < first]
                longest = first_warmup(store, campaign.id, benchmark, first)
                shorter = two_block_lead(firsts)
                if longest is None or shorter is None:
                    continue
                shorter = min(shorter, longest)
                later_s = in_leads = saved = 0.0
                moves, placebo = {}, {}
                for c in cells:
                    for r in c.per_execution:
                        if r.pexec >= first and r.block:
                            t = series.times(r)
                            later_s += float(np.sum(t))
                            in_leads += float(np.sum(t[:r.lead]))
                            saved += float(np.sum(t[shorter:r.lead]))
                    mine = [(r, series.times(r)) for r in c.per_execution if r.pexec < first and r.kind is not None]
                    if mine:
                        moves[c.mechanism] = float(np.mean([move(t, shorter, longest, args.steady) for _, t in mine]))
                        # the same reading between two windows both past the longest warm-up: its noise
                        later = [t for r, t in mine if r.iterations >= longest + 2 * args.steady]
                        if later:
                            placebo[c.mechanism] = float(np.mean([move(t, longest + args.steady, longest, args.steady)
                                                                  for t in later]))
                names = sorted(moves)
                ratio = (f"{math.exp(moves[names[1]] - moves[names[0]]):.4f} ({names[1]}/{names[0]})"
                         if len(names) == 2 else "—")
                if len(names) == 2 and shorter < longest:
                    ratio_moves.append(moves[names[1]] - moves[names[0]])
                    if sorted(placebo) == names:
                        noise.append(placebo[names[1]] - placebo[names[0]])
                print(f"| {benchmark} | {', '.join(map(str, block_warmups(firsts)))} | "
                      f"{longest} | {shorter} | {later_s:.1f} | {in_leads:.1f} | {saved:.1f} | "
                      f"{', '.join(f'{m} {v:+.2%}' for m, v in sorted(moves.items()))} | {ratio} |")
                totals["later"] += later_s
                totals["leads"] += in_leads
                totals["saved"] += saved
        store.close()
    if totals["later"]:
        print(f"\nin all: later JIT executions {totals['later']:.1f} s, {totals['leads']:.1f} s of it in leads "
              f"({totals['leads'] / totals['later']:.0%}); the two-block lead would have saved {totals['saved']:.1f} s "
              f"({totals['saved'] / totals['later']:.0%})")
    if ratio_moves:
        far = sum(abs(m) > math.log(1.02) for m in ratio_moves)
        print(f"where the two rules differ ({len(ratio_moves)} benchmarks), the shorter lead would move the ratio by "
              f"more than 2 % in {far}, from ×{math.exp(min(ratio_moves)):.3f} to ×{math.exp(max(ratio_moves)):.3f}")
    if noise:
        far = sum(abs(m) > math.log(1.02) for m in noise)
        print(f"the same reading between the {args.steady} iterations after the longest warm-up and the {args.steady} "
              f"after them (no warm-up in either: its noise) moves it by more than 2 % in {far} of {len(noise)}, "
              f"from ×{math.exp(min(noise)):.3f} to ×{math.exp(max(noise)):.3f}")


if __name__ == "__main__":
    main()
