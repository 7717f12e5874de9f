"""Does this machine slow its vCPUs together or one at a time? Two copies of calibrate's constant program run
at the same moment, one pinned to each of two CPUs, for a few seconds, several times; their iteration times
are cut into windows of equal wall time, and each window is compared with its copy's median. A benchmark of
the harness's environment (issue #22), not a test.

    .venv/bin/python evidence/sibling.py [--pairs 8] [--iterations 1500] [--cpus 0,1]

If the slow windows of the two copies coincide, a reference loop on the other CPU could flag a benchmark's
disturbed iterations; if they do not, the steps are the benchmarked CPU's own and no process in the guest
can see them (methodology §3).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from bridgebench.calibrate import PASSES, build

REPO = Path(__file__).resolve().parents[1]

WINDOW_S = 0.05
SLOW = 0.03  # a window this much slower than its copy's median is "slow"


def windows(times: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each window's mean iteration time over its copy's median, minus 1 (NaN for a window with none)."""
    ends = np.cumsum(times)
    which = np.searchsorted(edges, ends, side="right") - 1
    out = np.array([times[which == w].mean() if np.any(which == w) else np.nan for w in range(len(edges) - 1)])
    return out / np.median(times) - 1


def pair(binary: Path, iterations: int, cpus: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    copies = [subprocess.Popen(["taskset", "-c", cpu, str(binary), str(iterations), str(PASSES)],
                               stdout=subprocess.PIPE, text=True) for cpu in cpus]
    a, b = (np.asarray(json.loads(p.communicate()[0])["times"]) for p in copies)
    edges = np.arange(0.0, min(a.sum(), b.sum()), WINDOW_S)
    return windows(a, edges), windows(b, edges)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=1500)
    parser.add_argument("--cpus", default="0,1")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build")
    args = parser.parse_args()
    cpus = tuple(args.cpus.split(","))
    if len(cpus) != 2:
        sys.exit("sibling: --cpus takes two CPUs, e.g. 0,1")
    binary = build(args.build_dir)
    print(f"{args.pairs} pairs of the constant program on CPUs {cpus[0]} and {cpus[1]}, {args.iterations} "
          f"iterations each, in windows of {WINDOW_S * 1e3:.0f} ms; slow: {SLOW:.0%} above the copy's median")
    print("| pair | windows | slow on the first | slow on the second | slow on both | correlation |")
    print("|---|---|---|---|---|---|")
    first, second = [], []
    for i in range(args.pairs):
        a, b = pair(binary, args.iterations, cpus)
        keep = ~(np.isnan(a) | np.isnan(b))
        a, b = a[keep], b[keep]
        first.append(a)
        second.append(b)
        print(f"| {i + 1} | {len(a)} | {np.sum(a > SLOW)} | {np.sum(b > SLOW)} | {np.sum((a > SLOW) & (b > SLOW))} "
              f"| {np.corrcoef(a, b)[0, 1]:+.2f} |")
    a, b = np.concatenate(first), np.concatenate(second)
    slow_a, slow_b = a > SLOW, b > SLOW
    expected = slow_a.mean() * slow_b.mean() * len(a)  # if the two copies' slow windows were independent
    print(f"all: {len(a)} windows; slow on the first {slow_a.sum()} ({slow_a.mean():.1%}), on the second "
          f"{slow_b.sum()} ({slow_b.mean():.1%}), on both {np.sum(slow_a & slow_b)} (independence would give "
          f"{expected:.1f}); correlation of the windows {np.corrcoef(a, b)[0, 1]:+.2f}; largest {a.max():.0%} and "
          f"{b.max():.0%}")


if __name__ == "__main__":
    main()
