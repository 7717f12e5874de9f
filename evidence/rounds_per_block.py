"""How many rounds a later lock-step block should take: a replay of stored campaigns, nothing is run.

    .venv/bin/python evidence/rounds_per_block.py STORE [STORE …] [--mechanism luajit2]

A block's mean log ratio varies between blocks by w / r + b: w the variance of one round's log ratio within a block
(the host's steps that taking turns did not cancel, and the benchmark's own from round to round), r its rounds, and
b what fresh processes and layouts differ by, which no number of rounds removes. A block costs c0 + r · c1 of wall
time: c0 starting its processes and their leads (warm-up), c1 a round of every member's turn. For a given time the
interval's width goes with (w / r + b)(c0 + r · c1), which is least at r* = √(w · c0 / (b · c1)) (the optimum of
two-stage sampling: Cochran, Sampling Techniques, 1977, ch. 10). For each ratio to the baseline in a finished
campaign's later blocks (rounds from the budget's process_executions on, the blocks later_steady sizes), it gives w,
b, the rounds r a block took, c0 and c1 from the blocks' stored wall times, r*, and the time at r* for the same
width as a share of the time at r ("time at r*"; 100 % means the count is already the best). b is estimated as the
variance between blocks less w / r, and where that is not above zero the processes show no difference beyond the
rounds' noise and r* has no finite value ("more": every extra round pays). The summary lines pool w and b over each
mechanism's ratios, since one ratio's b rests on too few blocks to choose by. A benchmark of the budget's choice, not
a test.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

from bridgebench.stats.lockstep import round_logs
from bridgebench.store import Store
from bridgebench.timing.stored_ratios import missing, pairings, stored_ratios


def components(blocks: list[tuple[list[float], list[float]]]) -> tuple[float, float, float] | None:
    """(w, b, r) of a ratio's blocks: the mean variance of a round's log ratio within a block, the variance between
    the blocks' means less what w accounts for (it can come out at or below zero), and the mean rounds a block.
    None with fewer than three blocks of two rounds or more."""
    logs = [x for x in round_logs(blocks) if len(x) > 1]
    if len(logs) < 3:
        return None
    within = float(np.mean([np.var(x, ddof=1) for x in logs]))
    rounds = float(np.mean([len(x) for x in logs]))
    between = float(np.var([float(np.mean(x)) for x in logs], ddof=1))
    return within, between - float(np.mean([np.var(x, ddof=1) / len(x) for x in logs])), rounds


def best_rounds(w: float, b: float, c0: float, c1: float) -> float:
    """r* = √(w · c0 / (b · c1)), at least one round; infinite where b is not above zero."""
    return max(1.0, math.sqrt(w * c0 / (b * c1))) if b > 0 else math.inf


def time_share(w: float, b: float, c0: float, c1: float, r: float) -> float:
    """The least time for an interval as wide as r rounds a block give, over the time at r: at r* where b is above
    zero; else, as the rounds grow without end, c1 · r / (c0 + c1 · r)."""
    def cost(x: float) -> float:
        return (w / x + max(b, 0.0)) * (c0 + x * c1)
    r_star = best_rounds(w, b, c0, c1)
    return cost(r_star) / cost(r) if math.isfinite(r_star) else c1 * r / (c0 + c1 * r)


def block_times(store: Store, campaign_id: int, first: int) -> dict[str, list[tuple[float, float, int]]]:
    """Per benchmark, each later block's (c0, c1, rounds): its wall time less its rounds', a round's, and how many
    (the harness's stored block_wall_s, round_s and rounds)."""
    seen: dict[tuple[str, str], tuple[float, float, int]] = {}
    for e, pairing in pairings(store, campaign_id, first):
        if pairing.get("round_s"):
            rounds, round_s = int(pairing["rounds"]), float(pairing["round_s"])
            seen[(e.benchmark, pairing["block"])] = (float(pairing["block_wall_s"]) - rounds * round_s, round_s, rounds)
    out: dict[str, list[tuple[float, float, int]]] = {}
    for (benchmark, _), value in seen.items():
        out.setdefault(benchmark, []).append(value)
    return out


def block_costs(times: dict[str, list[tuple[float, float, int]]]) -> dict[str, tuple[float, float]]:
    """Per benchmark, the median over its later blocks of c0 (not below zero) and of c1."""
    return {b: (statistics.median(max(v[0], 0.0) for v in values), statistics.median(v[1] for v in values))
            for b, values in times.items()}


def fixed_share(times: dict[str, list[tuple[float, float, int]]]) -> tuple[float, float]:
    """A campaign's later blocks' fixed parts (c0) summed, and their whole wall times summed."""
    blocks = [v for values in times.values() for v in values]
    return sum(max(c0, 0.0) for c0, _, _ in blocks), sum(c0 + c1 * r for c0, c1, r in blocks)


def rows(path: Path, mechanism: str | None, totals: list[tuple[str, float, float]]
         ) -> list[tuple[str, str, str, float, float, float, float, float, float]]:
    """(campaign, benchmark, mechanism, w, b, r, c0, c1, r*) per ratio to the baseline over later blocks; appends each
    campaign's later blocks' summed fixed parts and wall times to `totals`."""
    out = []
    costs: dict[int, dict[str, tuple[float, float]]] = {}
    for x in stored_ratios(path, mechanism):
        campaign = x.result.campaign
        if campaign.id not in costs:
            times = block_times(x.store, campaign.id, x.first_later)
            costs[campaign.id] = block_costs(times)
            fixed, whole = fixed_share(times)
            totals.append((x.where, fixed, whole))
        if x.cell.benchmark not in costs[campaign.id]:
            continue
        parts = components(list(x.blocks(x.first_later).values()))
        if parts is None:
            continue
        w, between, r = parts
        c0, c1 = costs[campaign.id][x.cell.benchmark]
        out.append((x.where, x.cell.benchmark, x.result.label(x.cell.mechanism), w, between, r, c0, c1,
                    best_rounds(w, between, c0, c1)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", type=Path, nargs="+")
    ap.add_argument("--mechanism", help="only this mechanism's ratios (default: every mechanism's)")
    args = ap.parse_args()
    if error := missing(args.stores):
        print(error, file=sys.stderr)
        return 1
    totals: list[tuple[str, float, float]] = []
    found = [row for path in args.stores for row in rows(path, args.mechanism, totals)]
    if not found:
        print("no ratio has three later blocks of two rounds or more", file=sys.stderr)
        return 1
    print("| campaign | benchmark | mechanism | sd a round | sd between, beyond the rounds | rounds r | c0 (s) "
          "| c1 (s) | r* | time at r* |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shares: dict[str, list[float]] = {}
    for where, benchmark, mech, w, b, r, c0, c1, r_star in found:
        share = time_share(w, b, c0, c1, r)
        shares.setdefault(mech, []).append(share)
        between = f"{math.sqrt(b):.2%}" if b > 0 else "none"
        best = f"{r_star:.1f}" if math.isfinite(r_star) else "more"
        print(f"| {where} | {benchmark} | {mech} | {math.sqrt(w):.2%} | {between} | {r:.1f} | {c0:.2f} | {c1:.3f} "
              f"| {best} | {share:.0%} |")
    print()
    for where, fixed, whole in totals:
        print(f"{where}: the later blocks' fixed parts (c0) {fixed:.0f} s of their {whole:.0f} s")
    print()
    # One ratio's b rests on a few blocks and often comes out below zero; pooled over a mechanism's ratios (b and w as
    # sums, each ratio's cost its own) the model is steadier.
    for mech, values in shares.items():
        mine = [x for x in found if x[2] == mech]
        w, b = sum(x[3] for x in mine), sum(x[4] for x in mine)
        pooled = [time_share(w, b, x[6], x[7], x[5]) for x in mine]
        rounds = [best_rounds(w, b, x[6], x[7]) for x in mine]
        print(f"{mech}: {len(values)} ratios, time at r* over time at r by each ratio's own w and b: median "
              f"{statistics.median(values):.0%}, least {min(values):.0%}; by the mechanism's pooled ones (sd between "
              f"beyond the rounds {math.sqrt(max(b, 0) / w):.2f} of a round's): r* {statistics.median(rounds):.1f} "
              f"at the median against {statistics.median(x[5] for x in mine):.1f} taken, time at r* "
              f"{statistics.median(pooled):.0%} at the median, least {min(pooled):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
