"""What taking turns costs an iteration (issue #40, point 4): in a lock-step block another process runs on
the same CPU between two of your iterations and leaves its data in the caches. This times the constant
probe (probes/c/constant.c: passes over an array, L1-sized by default) pinned to one CPU in three ways,
for working sets and iteration lengths chosen here: alone in batch mode (as a sequential campaign runs
it), alone in stepped mode (a block of one: each iteration waits for the harness's go), and taking turns
with a second copy of itself (a block of two). It prints each against batch mode: the log ratio of the
executions' median iterations, mean and 99 % t interval over repetitions (the three alternate, so the
host's speed steps fall on all of them).

    .venv/bin/python evidence/turn_cost.py [--repetitions 6] [--iterations 100]

Both processes of a block run the same program; a ratio between two mechanisms pays what each pays, so
what matters for a ratio is the difference between two mechanisms' costs at their iteration length. A
benchmark of the harness, not a test: its figures go to docs/methodology.md §13.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy import stats

from bridgebench.protocol import parse
from bridgebench.timing import lockstep

REPO = Path(__file__).resolve().parents[1]
WORKING_SETS = {"32 KiB": 4096, "4 MiB": 512 * 1024}
LENGTHS_MS = (0.1, 1.0, 10.0, 30.0)


def build(folder: Path) -> Path:
    exe = folder / "constant"
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", str(exe), str(REPO / "probes" / "c" / "constant.c")],
                   check=True)
    return exe


def pass_s(exe: Path, cells: int) -> float:
    """One pass's time over the array, from a short run (its median iteration of 20 passes)."""
    done = subprocess.run([str(exe), "21", "20", str(cells)], capture_output=True, text=True, check=True)
    times = parse(done.stdout, 21).times
    return statistics.median(times[1:]) / 20


def batch(exe: Path, cells: int, passes: int, iterations: int) -> float:
    """The median iteration of one batch-mode execution pinned to the lock CPU (the first tenth left out)."""
    cpu = lockstep.lock_cpu()
    done = subprocess.run([str(exe), str(iterations), str(passes), str(cells)], capture_output=True, text=True,
                          check=True, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    times = parse(done.stdout, iterations).times
    return statistics.median(times[iterations // 10:])


def medians(exe: Path, cells: int, passes: int, iterations: int, members: int, seed: str) -> list[float]:
    """The median iteration of each member of one block (the first tenth left out as warm-up)."""
    argv = [str(exe), str(iterations), str(passes), str(cells)]
    env = {"PATH": os.environ["PATH"]}
    runs = lockstep.run_block([lockstep.Member(argv, env, REPO, iterations) for _ in range(members)],
                              timeout_s=600, seed=seed, cpu=lockstep.lock_cpu())
    out = []
    for run in runs:
        if run.output is None:
            sys.exit(f"a block failed: {run.status}: {run.detail}")
        out.append(statistics.median(run.output.times[iterations // 10:]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()
    if lockstep.lock_cpu() is None:
        sys.exit("this harness may use one CPU only: nothing to pin the block to apart from itself")
    print("| working set | iteration (batch, alone) | stepped alone / batch | taking turns / batch | repetitions |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        for name, cells in WORKING_SETS.items():
            one_pass = pass_s(exe, cells)
            for length_ms in LENGTHS_MS:
                passes = max(1, round(length_ms / 1e3 / one_pass))
                if passes * one_pass > 2 * length_ms / 1e3:
                    continue  # one pass is longer than this length
                alone_s: list[float] = []
                logs: dict[str, list[float]] = {"stepped": [], "turns": []}
                for r in range(args.repetitions):
                    alone = batch(exe, cells, passes, args.iterations)
                    stepped = medians(exe, cells, passes, args.iterations, 1, f"{name}-{length_ms}-{r}-a")[0]
                    turns = medians(exe, cells, passes, args.iterations, 2, f"{name}-{length_ms}-{r}-t")
                    logs["stepped"].append(math.log(stepped / alone))
                    logs["turns"].append(statistics.mean(math.log(t / alone) for t in turns))
                    alone_s.append(alone)
                shown = []
                for series in logs.values():
                    mean, sd = statistics.mean(series), statistics.stdev(series)
                    half = stats.t.ppf(0.995, len(series) - 1) * sd / math.sqrt(len(series))
                    shown.append(f"×{math.exp(mean):.4f} ({math.exp(mean - half):.4f}–{math.exp(mean + half):.4f})")
                print(f"| {name} | {statistics.median(alone_s) * 1e3:.3g} ms | {shown[0]} | {shown[1]} | "
                      f"{args.repetitions} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
