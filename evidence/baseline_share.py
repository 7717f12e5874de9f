"""How much of each ratio's spread between lock-step blocks is the baseline's own process, and what more baseline
processes a block would buy: a replay of stored campaigns, nothing is run.

    .venv/bin/python evidence/baseline_share.py STORE [STORE …] [--baseline luajit] [--twin luajit-again]

Every ratio of a block is to the block's one baseline process, so what that process differs by (its layout, its
JIT's decisions, a mode) moves all the block's ratios together: the covariance between two mechanisms' block
log ratios estimates the variance of the baseline's part (var_b, the mean over the pairs of mechanisms), and the
rest of each ratio's variance is its own mechanism's. With k baseline processes a block and the block's ratio
taken to their mean, the baseline's part would be var_b / k, and the block would cost (M - 1 + k) / M of one of
M members (its members take about the same time, as the default's later blocks are sized). The gain is the
variance times the cost, with one baseline process over with k: how many times fewer seconds of blocks an
interval of the same width would take (above 1: worth it).

With --twin (a mechanism that is the baseline under another name, run in the same blocks), the spread of each
ratio to the mean of the baseline and its twin is read directly, beside the ratio to the baseline alone: two
baseline processes a block, measured, not projected.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from bridgebench.stats.lockstep import block_log_ratio
from bridgebench.store import Store
from bridgebench.timing.analysis import Rounds, Series, current_analysis, lockstep_blocks

KS = (2, 3, 4)


def values(base: Rounds, other: Rounds) -> dict[str, float]:
    """Each block's log ratio other / base, over the rounds both were steady, by the block's token (as the
    analysis pairs them)."""
    return {block: block_log_ratio(a, b) for block, (a, b) in lockstep_blocks(base, other).items()}


def to_two(base: Rounds, twin: Rounds, other: Rounds) -> dict[str, tuple[float, float]]:
    """Each block's log ratio other / base and other / (the geometric mean of base and twin), over the rounds
    all three were steady."""
    out = {}
    for r in sorted(set(base) & set(twin) & set(other)):
        a, t, b = base[r], twin[r], other[r]
        rounds = sorted(set(a.turns) & set(t.turns) & set(b.turns))
        if a.block is None or not a.block == t.block == b.block or not rounds:
            continue
        alone = block_log_ratio([a.turns[i] for i in rounds], [b.turns[i] for i in rounds])
        mean = [math.sqrt(a.turns[i] * t.turns[i]) for i in rounds]
        out[a.block] = (alone, block_log_ratio(mean, [b.turns[i] for i in rounds]))
    return out


def baseline_variance(ratios: dict[str, dict[str, float]]) -> tuple[float | None, int]:
    """var_b: the mean covariance between two mechanisms' block log ratios, over the blocks all of them have."""
    names = sorted(ratios)
    common = set.intersection(*(set(v) for v in ratios.values())) if names else set()
    if len(names) < 2 or len(common) < 4:
        return None, len(common)
    blocks = sorted(common)
    covs = [statistics.covariance([ratios[x][k] for k in blocks], [ratios[y][k] for k in blocks])
            for i, x in enumerate(names) for y in names[i + 1:]]
    return max(0.0, statistics.fmean(covs)), len(blocks)


def gain(variance: float, sigma_b2: float, members: int, k: int) -> float:
    """Seconds of blocks for an interval of one width, one baseline process a block over k. The baseline's part of
    a ratio's variance is at most all of it (var_b, a mean over pairs of mechanisms, can exceed one ratio's)."""
    shared = min(sigma_b2, variance)
    after = (variance - shared + shared / k) * (members - 1 + k)
    return variance * members / after if after > 0 else math.inf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", type=Path, nargs="+")
    ap.add_argument("--baseline", default="luajit")
    ap.add_argument("--twin", help="the baseline under another name, in the same blocks")
    args = ap.parse_args()
    gains: dict[int, list[float]] = {k: [] for k in KS}
    measured: list[float] = []  # with the twin: the same gain, read from the two baseline processes a block
    for path in args.stores:
        store = Store(path, create=False)
        for campaign in store.campaigns():
            result = current_analysis(store, campaign.id)
            series = Series(store, result.metric)
            print(f"\n{path.name}, campaign {campaign.id}\n")
            print("| benchmark | blocks | sd of each ratio between blocks | sd_b | baseline's share | gain, k = "
                  + ", ".join(map(str, KS)) + " |" + (" with the twin: sd to the baseline → to both |"
                                                      if args.twin else "")
                  + "\n|---|---|---|---|---|---|" + ("---|" if args.twin else ""))
            for benchmark in result.benchmarks:
                cells = {c.mechanism: c for c in result.cells if c.benchmark == benchmark}
                if args.baseline not in cells:
                    continue
                rounds = {m: series.steady(c.per_execution) for m, c in cells.items()}
                base = rounds[args.baseline]
                others = [m for m in cells if m not in (args.baseline, args.twin)]
                ratios = {m: values(base, rounds[m]) for m in others}
                ratios = {m: v for m, v in ratios.items() if len(v) >= 4}
                if not ratios:
                    continue
                sds = {m: statistics.stdev(v.values()) for m, v in ratios.items()}
                sigma_b2, blocks = baseline_variance(ratios)
                if sigma_b2 is None and args.twin and args.twin in rounds:
                    twins = values(base, rounds[args.twin])  # var(twin / base) = 2 var_b
                    sigma_b2 = statistics.variance(twins.values()) / 2 if len(twins) >= 4 else None
                    blocks = len(twins)
                members = len(others) + 1 + (1 if args.twin else 0)
                row = f"| {benchmark} | {blocks} | " + ", ".join(f"{m} {s:.2%}" for m, s in sorted(sds.items()))
                if sigma_b2 is None:
                    row += " | — | — | — |"
                else:
                    share = statistics.fmean(min(1.0, sigma_b2 / s ** 2) for s in sds.values() if s > 0)
                    per_k = {k: [gain(s ** 2, sigma_b2, members, k) for s in sds.values() if s > 0] for k in KS}
                    for k in KS:
                        gains[k].extend(per_k[k])
                    row += (f" | {math.sqrt(sigma_b2):.2%} | {share:.0%} | "
                            + ", ".join(f"×{statistics.median(per_k[k]):.2f}" for k in KS) + " |")
                if args.twin and args.twin in rounds:
                    both = {m: v for m, v in ((m, to_two(base, rounds[args.twin], rounds[m])) for m in others)
                            if len(v) >= 4}
                    read = []
                    for m, v in sorted(both.items()):
                        alone, two = (statistics.stdev(x[i] for x in v.values()) for i in (0, 1))
                        read.append(f"{m} {alone:.2%} → {two:.2%} ({len(v)})")
                        if two > 0:  # a block with the twin has one member more than one without it
                            measured.append(alone ** 2 * (members - 1) / (two ** 2 * members))
                    row += " " + ", ".join(read) + " |"
                print(row)
        store.close()
    if gains[KS[0]]:
        print("\nthe gain over every ratio read (median, lowest, highest): " + "; ".join(
            f"k = {k}: ×{statistics.median(g):.2f} (×{min(g):.2f}–×{max(g):.2f})" for k, g in gains.items()))
    if measured:
        print(f"measured with the twin, k = 2 (median, lowest, highest): ×{statistics.median(measured):.2f} "
              f"(×{min(measured):.2f}–×{max(measured):.2f}), over {len(measured)} ratios")


if __name__ == "__main__":
    main()
