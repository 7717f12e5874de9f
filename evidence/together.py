"""Two lua-vms mechanisms on one benchmark, three ways, blocks alternating in a drawn order (issue #40): taking
turns (lock-step blocks as campaigns run them, each iteration on the wall clock), together (`--turns together`:
both at once on the block's CPU, each iteration its processes' CPU time) and one after the other (each process
alone in batch mode, as `--pairing sequential` runs them, but pinned to the block's CPU, which a sequential
campaign does not do: so that only the pairing differs between the three ways). A benchmark of the harness's
method on this machine, not a test; its figures go to docs/methodology.md §13.

    .venv/bin/python evidence/together.py A B BENCHMARK [--iterations-a N] [--iterations-b N] [--blocks 8]
                                          [--skip 0.3] [--build-dir build]

A and B are lua-vms mechanisms (lua51, lua51-again, lua54, luajit, luajit-again, luajit-plus2, luajit2, …; built
first by `bridgebench build lua-vms`); give B more or fewer iterations than A when its iterations are shorter or
longer, so that both take about as long (together, a member that finishes first leaves the other alone).
Per block and way, B's mean iteration over A's, the first --skip of each process's iterations left out (a JIT's
warm-up): the table gives, per way, the geometric mean ratio with its 99 % interval over blocks (Student's t),
the sd of the blocks' log ratios, and each side's median mean iteration. Layouts are fixed by the paths (as
`--layout fixed`): what is compared is how the machine's speed falls on the two sides.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

from scipy import stats

from bridgebench.build import build_study
from bridgebench.campaign.timing import command_for
from bridgebench.runner import OK, execute
from bridgebench.study import find_study, read_study
from bridgebench.timing import lockstep

REPO = Path(__file__).resolve().parents[1]
WAYS = ("turns", "together", "apart")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("benchmark")
    ap.add_argument("--iterations-a", type=int, default=10)
    ap.add_argument("--iterations-b", type=int, default=None, help="default: as A")
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--skip", type=float, default=0.3, help="share of each process's first iterations left out")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    study = read_study(find_study("lua-vms"))
    builds = build_study(study, args.build_dir / "lua-vms", [args.a, args.b])
    for name, built in builds.items():
        if not built.available:
            sys.exit(f"together: {name} is unavailable: {built.reason}")
    param = study.benchmarks[args.benchmark].param
    # as a block sizes them: rounds of one turn each, a turn as many iterations as take about as long as the other's
    # (together without the like-with-like rule, lockstep.turns); one after the other as many as taking turns
    asked = [args.iterations_a, args.iterations_b or args.iterations_a]
    sizes = {way: lockstep.turns(asked, like_with_like=way != "together") for way in WAYS}
    sides = {way: [(args.a, rounds * each[0]), (args.b, rounds * each[1])] for way, (rounds, each) in sizes.items()}
    commands = {way: [command_for(study, builds[m], args.benchmark, param, k) for m, k in sides[way]] for way in WAYS}
    cpu = lockstep.lock_cpu()
    rng = random.Random(args.seed)
    ratios: dict[str, list[float]] = {w: [] for w in WAYS}
    means: dict[str, list[tuple[float, float]]] = {w: [] for w in WAYS}
    for way in WAYS:
        (a, na), (b, nb) = sides[way]
        print(f"{way}: {b} ({nb} iterations, turns of {sizes[way][1][1]}) over {a} ({na}, turns of {sizes[way][1][0]})"
              f" on {args.benchmark} ({param})", flush=True)
    print(f"{args.blocks} blocks each way, CPU {cpu}", flush=True)
    for block in range(args.blocks):
        for way in rng.sample(WAYS, len(WAYS)):
            times = run(way, commands[way], [k for _, k in sides[way]], sizes[way][1], cpu, f"{args.seed}:{block}")
            a, b = (steady(t, args.skip) for t in times)
            ratios[way].append(math.log(b / a))
            means[way].append((a, b))
        print(f"block {block + 1} of {args.blocks} done", flush=True)
    print("| way | B / A (99 %) | sd of the blocks' log ratios | A's mean iteration | B's |")
    print("|---|---|---|---|---|")
    for way in WAYS:
        logs = ratios[way]
        k = len(logs)
        mean, sd = statistics.fmean(logs), statistics.stdev(logs)
        half = stats.t.ppf(0.995, k - 1) * sd / math.sqrt(k)
        a_ms = statistics.median(a for a, _ in means[way]) * 1e3
        b_ms = statistics.median(b for _, b in means[way]) * 1e3
        print(f"| {way} | ×{math.exp(mean):.4f} ({math.exp(mean - half):.4f}–{math.exp(mean + half):.4f}) | "
              f"{sd * 100:.2f} % | {a_ms:.2f} ms | {b_ms:.2f} ms |")
    return 0


def run(way: str, commands: list[tuple[list[str], dict[str, str]]], iterations: list[int], turn: list[int],
        cpu: int | None, seed: str) -> list[list[float]]:
    """Each side's iteration times from one block of the way (CPU seconds together, wall seconds otherwise)."""
    if way == "apart":
        order = random.Random(seed).sample(range(len(commands)), len(commands))
        runs = {}
        for i in order:
            argv, env = commands[i]
            runs[i] = execute(argv if cpu is None else ["taskset", "-c", str(cpu), *argv], env, REPO, iterations[i],
                              600.0)
        done = [runs[i] for i in range(len(commands))]
    else:
        members = [lockstep.Member(argv, env, REPO, k, t)
                   for (argv, env), k, t in zip(commands, iterations, turn, strict=True)]
        done = lockstep.run_block(members, timeout_s=600.0, seed=seed, cpu=cpu, together=way == "together")
    for r in done:
        if r.status != OK or r.output is None:
            sys.exit(f"together: a {way} execution failed: {r.status}: {r.detail}")
    return [list(r.output.times) for r in done if r.output is not None]


def steady(times: list[float], skip: float) -> float:
    return statistics.fmean(times[int(len(times) * skip):])


if __name__ == "__main__":
    sys.exit(main())
