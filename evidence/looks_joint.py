"""What Bonferroni's correction over a ratio's look points costs: how often at least one of the intervals judged
at lua-vms's look points misses the truth, with each at the budget's confidence (1 - 0.01/L) and at looser
ones, for normal block log ratios (Student's t over blocks, as the analysis computes them). A benchmark of
the method, not a test; nothing is run but the simulation.

    .venv/bin/python evidence/looks_joint.py [--pairs 40000] [--seed 1]

The looks are far apart (each at 1.5 times the blocks of the last), so their intervals are nearly independent
and the union bound is nearly tight: a level calibrated to miss 1 % together would narrow each interval by the
ratio of the t quantiles printed beside it, a few percent, where blocks cost the square of that.
"""

from __future__ import annotations

import argparse

import numpy as np

from bridgebench.options import look_points, looks
from bridgebench.stats.executions import t_quantile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=40_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=3)
    ap.add_argument("--cap", type=int, default=300)
    ap.add_argument("--growth", type=float, default=1.5)
    args = ap.parse_args()
    points = look_points(args.first, args.cap, args.growth)
    count = looks(args.first, args.cap, args.growth)
    x = np.random.default_rng(args.seed).standard_normal((args.pairs, args.cap))
    sums, squares = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    # |t| of each pair's mean at each look (the truth is 0)
    stats = []
    for n in points:
        mean = sums[:, n - 1] / n
        var = (squares[:, n - 1] - n * mean * mean) / (n - 1)
        stats.append(np.abs(mean) / np.sqrt(var / n))
    t = np.array(stats).T
    bonferroni = 0.01 / count
    print(f"look points {', '.join(map(str, points))}; the budget's L = {count} (one more for a stop by time)")
    print("| each interval's miss | its confidence | some look misses | t at 41 blocks | against the budget's |")
    print("|---|---|---|---|---|")
    at41 = points.index(41) if 41 in points else len(points) // 2
    base = t_quantile(1 - bonferroni / 2, points[at41] - 1)
    for alpha in (bonferroni, 0.001, 0.0015, 0.002, 0.003):
        q = np.array([t_quantile(1 - alpha / 2, n - 1) for n in points])
        joint = float((t > q).any(axis=1).mean())
        print(f"| {alpha:.5f} | {1 - alpha:.4%} | {joint:.2%} | {q[at41]:.2f} | ×{q[at41] / base:.3f} |")


if __name__ == "__main__":
    main()
