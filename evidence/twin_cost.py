"""What a JIT pays for taking its turns at the same time as its twin (`run --turns twins`): each
process's CPU time an iteration beside its twin against alone, in the same process (issue #40). A benchmark of the
harness's method on this machine, not a test; its figures go to docs/methodology.md §13.

    .venv/bin/python evidence/twin_cost.py A B BENCHMARK [--blocks 12] [--rounds 20] [--turn 4] [--lead 10]
                                           [--beside lua51] [--build-dir build] [--seed 0]

A block starts A and B (lua-vms mechanisms, built first by `bridgebench build lua-vms`) as stepped probes pinned to
one CPU, with one layout drawn for both (as a block of the default draws it), and, with --beside, a third member
that takes its turn alone every round, as the interpreters do in the default's blocks. After --lead iterations
each (a JIT's warm-up, not counted), each round is drawn, half of them each way: *twins* (A's and B's turns at the
same time, the scheduler sharing the CPU) or *apart* (A's turn alone, then B's, in a drawn order); each turn is
--turn iterations, every one timed by the process's own CPU time (its `cpu_s`), as the default times them.

Per block and process: the log of its mean CPU time an iteration in twins rounds over its mean in apart rounds,
its cost of sharing (the process, its layout and its mode are the same on both sides; the machine's speed steps
fall on both kinds of round alike, the rounds' kinds being drawn). Printed: A's cost, B's, and B's less A's, each
as a factor with its 99 % interval over blocks (Student's t). A ratio of B to A taken as twins differs from one
taken apart by B's less A's; a ratio of an interpreter, alone, to A taken as twins is A's cost below the one to A
alone.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

from scipy import stats

from bridgebench.build import BuildResult, build_study
from bridgebench.campaign.timing import command_for
from bridgebench.runner import OK, Execution, UsageFile, launcher
from bridgebench.study import Study, find_study, read_study
from bridgebench.timing import layout, lockstep, stepped
from bridgebench.timing.together import timed, turns_at_once, watch

REPO = Path(__file__).resolve().parents[1]
TWINS, APART = "twins", "apart"
TIMEOUT_S = 600.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("benchmark")
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=20, help="per block, half of them each way")
    ap.add_argument("--turn", type=int, default=4, help="iterations a turn")
    ap.add_argument("--lead", type=int, default=10, help="iterations before the first round, not counted")
    ap.add_argument("--beside", help="a mechanism taking a turn of one iteration alone every round")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.rounds < 2 or args.rounds % 2 or args.blocks < 2:
        sys.exit("twin_cost: --rounds must be even and at least 2, --blocks at least 2")
    study = read_study(find_study("lua-vms"))
    names = [args.a, args.b, *([args.beside] if args.beside else [])]
    builds = build_study(study, args.build_dir / "lua-vms", names)
    for name, built in builds.items():
        if not built.available:
            sys.exit(f"twin_cost: {name} is unavailable: {built.reason}")
    param = study.benchmarks[args.benchmark].param
    cpu = lockstep.lock_cpu()
    rng = random.Random(args.seed)
    costs: dict[str, list[float]] = {"a": [], "b": [], "b-a": []}
    print(f"{args.b} and {args.a} on {args.benchmark} ({param}): {args.blocks} blocks of {args.rounds} rounds, "
          f"turns of {args.turn}, leads of {args.lead}, CPU {cpu}"
          + (f", {args.beside} beside" if args.beside else ""), flush=True)
    for block in range(args.blocks):
        kinds = [TWINS, APART] * (args.rounds // 2)
        rng.shuffle(kinds)
        drawn = layout.draw()
        twins_n = args.lead + args.rounds * args.turn
        members = [stepped.Member(*_command(study, builds[m], args.benchmark, param, twins_n, drawn), REPO,
                                  twins_n, args.turn, args.lead) for m in (args.a, args.b)]
        if args.beside:
            members.append(stepped.Member(*_command(study, builds[args.beside], args.benchmark, param,
                                                    1 + args.rounds, drawn), REPO, 1 + args.rounds, 1, 1))
        times = run_block(members, kinds, cpu, rng)
        a, b = (_cost(t, kinds, args.lead, args.turn) for t in times[:2])
        costs["a"].append(a)
        costs["b"].append(b)
        costs["b-a"].append(b - a)
        print(f"block {block + 1}: {args.a} ×{math.exp(a):.4f}, {args.b} ×{math.exp(b):.4f} (pads {drawn})",
              flush=True)
    print(f"| CPU time an iteration, twins over apart | factor (99 % over {args.blocks} blocks) | sd of the blocks |")
    print("|---|---|---|")
    for key, label in (("a", args.a), ("b", args.b), ("b-a", f"{args.b} over {args.a}")):
        logs = costs[key]
        mean, sd = statistics.fmean(logs), statistics.stdev(logs)
        half = stats.t.ppf(0.995, len(logs) - 1) * sd / math.sqrt(len(logs))
        print(f"| {label} | ×{math.exp(mean):.4f} ({math.exp(mean - half):.4f}–{math.exp(mean + half):.4f}) | "
              f"{sd * 100:.2f} % |")
    return 0


def _command(study: Study, build: BuildResult, benchmark: str, param: str, n: int,
             drawn: dict[str, int]) -> tuple[list[str], dict[str, str]]:
    argv, env = command_for(study, build, benchmark, param, n)
    return argv, layout.applied(env, drawn)


def run_block(members: list[stepped.Member], kinds: list[str], cpu: int | None,
              rng: random.Random) -> list[list[float]]:
    """Each member's iterations in CPU seconds: leads together, then each round's turns as its kind says (the
    member beside, if any, alone at a drawn place in every round)."""
    launch = launcher()
    harness = os.sched_getaffinity(0)
    with contextlib.ExitStack() as files:
        if cpu is not None and harness - {cpu}:  # the harness keeps off the block's CPU, as a campaign's does
            os.sched_setaffinity(0, harness - {cpu})
            files.callback(os.sched_setaffinity, 0, harness)
        usages = [files.enter_context(UsageFile()) for _ in members]
        lives = [stepped.spawn(m, cpu, launch, u) for m, u in zip(members, usages, strict=True)]
        try:
            runs = _rounds(lives, members, kinds, rng)
        except BaseException:
            stepped.kill(*lives)
            raise
    for r in runs:
        if r.status != OK or r.output is None:
            sys.exit(f"twin_cost: a member failed: {r.status}: {r.detail}")
    return [list(r.output.times) for r in runs if r.output is not None]


def _rounds(lives: list[stepped.Live], members: list[stepped.Member], kinds: list[str],
            rng: random.Random) -> list[Execution]:
    for live in lives:
        if stepped.next_line(live, time.monotonic() + TIMEOUT_S) != stepped.READY:
            sys.exit(f"twin_cost: {live.member.argv[0]} did not start in stepped mode: {live.failure}")
        stepped.look(live)
        watch(live)
    turns_at_once(lives, {i: (0, m.lead) for i, m in enumerate(members)}, list(range(len(members))), TIMEOUT_S)
    for r, kind in enumerate(kinds):
        plan = {i: (m.lead + r * m.turn, m.turn) for i, m in enumerate(members)}
        units = [[0, 1]] if kind == TWINS else [[0], [1]]
        units += [[2]] if len(members) > 2 else []
        rng.shuffle(units)
        for unit in units:
            turns_at_once(lives, {i: plan[i] for i in unit}, rng.sample(unit, len(unit)), TIMEOUT_S)
    return [timed(live, stepped.finish(live, TIMEOUT_S)) for live in lives]


def _cost(times: list[float], kinds: list[str], lead: int, turn: int) -> float:
    """log(mean CPU an iteration in twins rounds / in apart rounds) for one process."""
    by: dict[str, list[float]] = {TWINS: [], APART: []}
    for r, kind in enumerate(kinds):
        by[kind].extend(times[lead + r * turn: lead + (r + 1) * turn])
    return math.log(statistics.fmean(by[TWINS]) / statistics.fmean(by[APART]))


if __name__ == "__main__":
    sys.exit(main())
