"""Issue #40's second lane, tried before it is built: two lock-step blocks at once, one pinned to each vCPU
(the harness's threads on the first, sharing it with that lane), against one block at a time on the highest
CPU as campaigns run them. The planted loop (probes/c/planted.c) is A, A again and A with 2 % more work; each
campaign is --blocks blocks, and gives a 99 % interval over its blocks (stats/lockstep.py) for A again / A
and for A+2 % / A. The two ways alternate campaign by campaign, so the host's moods fall on both.

    .venv/bin/python evidence/second_lane.py [--campaigns 30] [--blocks 6] [--iterations 60]

Prints, for each way, how often A/A's interval holds 1 and how often +2 %'s lies above 1 (with 99 %
Clopper-Pearson intervals), the median interval half-widths, and the blocks finished per minute; then, for
each way and CPU, the sd of A/A's log ratios within blocks and between them (stats.lockstep.spread), which
says whether a second lane spreads both lanes or the one that shares its CPU with the harness. The
disturbance audit is left out here: it reads the whole machine, so each lane would count the other as a
disturbance. A benchmark of the harness, not a test: its figures go to docs/methodology.md §13.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gate_power import interval  # a sibling script (a script's own folder is on its path)

from bridgebench.runner import OK
from bridgebench.stats.lockstep import lockstep_ratio, spread
from bridgebench.timing import lockstep

REPO = Path(__file__).resolve().parents[1]
WORK = "2000000"  # the self-test's steady benchmark: a few ms an iteration
SCALES = {"a": "1", "a-again": "1", "a-plus2": "1.02"}


def build(folder: Path) -> Path:
    exe = folder / "planted"
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", str(exe), str(REPO / "probes" / "c" / "planted.c")],
                   check=True)
    return exe


def members(exe: Path, iterations: int) -> list[lockstep.Member]:
    return [lockstep.Member([str(exe), str(iterations), WORK], {"PATH": "/usr/bin:/bin", "PLANTED_SCALE": scale},
                            exe.parent, iterations) for scale in SCALES.values()]


def block_times(exe: Path, iterations: int, cpu: int, seed: str) -> list[list[float]]:
    """One block's iteration times, a list per member (A, A again, A+2 %); the first round left out."""
    runs = lockstep.run_block(members(exe, iterations), timeout_s=120, seed=seed, cpu=cpu)
    bad = [r for r in runs if r.status != OK or r.output is None]
    if bad:
        sys.exit(f"a block failed: {bad[0].status}: {bad[0].detail}")
    return [list(r.output.times[1:]) for r in runs if r.output]


def lane(exe: Path, iterations: int, cpu: int, seeds: list[str], out: list[list[list[float]]]) -> None:
    if cpu == 0:  # this lane's harness thread stays on its CPU, sharing it with its block
        os.sched_setaffinity(0, {0})
    for seed in seeds:
        out.append(block_times(exe, iterations, cpu, seed))


def campaign(exe: Path, iterations: int, blocks: int, lanes: int, tag: str) -> tuple[list, list[int], float]:
    """`blocks` blocks, `lanes` at a time; the blocks, the CPU each ran on, and the wall time they took."""
    cpus = sorted(os.sched_getaffinity(0))[-lanes:][::-1]  # the highest first, as lock_cpu() chooses
    seeds = [[f"{tag}:{k}" for k in range(i, blocks, lanes)] for i in range(lanes)]
    results: list[list[list[list[float]]]] = [[] for _ in range(lanes)]
    started = time.monotonic()
    threads = [threading.Thread(target=lane, args=(exe, iterations, cpu, s, r))
               for cpu, s, r in zip(cpus, seeds, results, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ([b for r in results for b in r], [cpu for cpu, r in zip(cpus, results, strict=True) for _ in r],
            time.monotonic() - started)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=60)
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("a second lane needs two CPUs")
    tally = {1: {"aa": 0, "plus": 0, "hw_aa": [], "hw_plus": [], "blocks": 0, "wall": 0.0},
             2: {"aa": 0, "plus": 0, "hw_aa": [], "hw_plus": [], "blocks": 0, "wall": 0.0}}
    aa: dict[tuple[int, int], list] = {}  # (lanes, CPU) -> A/A's blocks
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        for i in range(args.campaigns):
            for lanes in ((1, 2) if i % 2 == 0 else (2, 1)):
                blocks, cpus, wall = campaign(exe, args.iterations, args.blocks, lanes, f"{i}:{lanes}")
                for b, cpu in zip(blocks, cpus, strict=True):
                    aa.setdefault((lanes, cpu), []).append((b[0], b[1]))
                t = tally[lanes]
                for key, side in (("aa", 1), ("plus", 2)):
                    est = lockstep_ratio([(b[0], b[side]) for b in blocks])
                    assert est.low is not None and est.high is not None
                    t[key] += (est.low <= 1 <= est.high) if key == "aa" else (est.low > 1)
                    t["hw_" + key].append(math.log(est.high / est.low) / 2)
                t["blocks"] += len(blocks)
                t["wall"] += wall
            print(f"campaign {i + 1}: one lane A/A {tally[1]['aa']}, +2 % {tally[1]['plus']}; two lanes A/A "
                  f"{tally[2]['aa']}, +2 % {tally[2]['plus']}", file=sys.stderr, flush=True)
    n = args.campaigns
    print(f"| lanes | A/A interval holds 1 | +2 % found (interval above 1) | median half-width A/A, +2 % | "
          f"blocks per minute |  ({args.blocks} blocks a campaign, {args.iterations} rounds a block)")
    print("|---|---|---|---|---|")
    for lanes, t in tally.items():
        print(f"| {lanes} | {interval(t['aa'], n)} | {interval(t['plus'], n)} | ±{statistics.median(t['hw_aa']):.2%}, "
              f"±{statistics.median(t['hw_plus']):.2%} | {60 * t['blocks'] / t['wall']:.1f} |")
    print("\n| lanes | CPU | A/A blocks | sd within blocks | sd between blocks |\n|---|---|---|---|---|")
    for (lanes, cpu), pairs in sorted(aa.items()):
        within, between, _ = spread(pairs)
        print(f"| {lanes} | {cpu} | {len(pairs)} | {within:.2%} | {between:.2%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
