"""Two lua-vms mechanisms on one benchmark, three ways, blocks alternating in a drawn order (issue #40): taking
turns (lock-step blocks as campaigns run them, each iteration on the wall clock), together (`--turns together`:
both at once on the block's CPU, each iteration its processes' CPU time) and one after the other (each process
alone in batch mode, as `--pairing sequential` runs them, but pinned to the block's CPU, which a sequential
campaign does not do: so that only the pairing differs between the three ways). A benchmark of the harness's
method on this machine, not a test; its figures go to docs/methodology.md §13.

    .venv/bin/python evidence/together.py A B BENCHMARK [--iterations-a N] [--iterations-b N] [--blocks 8]
                                          [--skip 0.3] [--build-dir build] [--ways turns,together,apart]

A and B are lua-vms mechanisms (lua51, lua51-again, lua54, luajit, luajit-again, luajit-plus2, luajit2, …; built
first by `bridgebench build lua-vms`); give B more or fewer iterations than A when its iterations are shorter or
longer, so that both take about as long (together, a member that finishes first leaves the other alone).
Per block and way, B's mean iteration over A's, the first --skip of each process's iterations left out (a JIT's
warm-up): the table gives, per way, the geometric mean ratio with its 99 % interval over blocks (Student's t),
the sd of the blocks' log ratios, and each side's median mean iteration. Layouts are fixed by the paths (as
`--layout fixed`): what is compared is how the machine's speed falls on the two sides.

`--ways` picks the ways; `together@MS` is together with every member's scheduler slice set to MS milliseconds
(sched_setattr's sched_runtime, which Linux's EEVDF scheduler takes as a task's slice since 6.12; the kernel's own
is printed): each member then runs that long before the scheduler hands the CPU to the other, so the switches, and
what each pays for them, are fewer, and the machine's speed steps shorter than a slice are shared less.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import math
import os
import random
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

from scipy import stats

from bridgebench.build import build_study
from bridgebench.campaign.timing import command_for
from bridgebench.runner import OK, execute
from bridgebench.study import SEPARATE, TOGETHER, find_study, read_study
from bridgebench.timing import lockstep

REPO = Path(__file__).resolve().parents[1]
WAYS = ("turns", "together", "apart")
_SCHED_SETATTR, _SCHED_GETATTR = 314, 315  # x86_64


class _Attr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32), ("flags", ctypes.c_uint64),
                ("nice", ctypes.c_int32), ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64), ("util_min", ctypes.c_uint32),
                ("util_max", ctypes.c_uint32)]


def _sched(call: int, attr: _Attr) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    args = (0, ctypes.byref(attr), ctypes.sizeof(attr), 0) if call == _SCHED_GETATTR else (0, ctypes.byref(attr), 0)
    if libc.syscall(call, *args) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def slice_ns() -> int:
    """This thread's scheduler slice: the kernel's base slice unless it was set."""
    attr = _Attr()
    _sched(_SCHED_GETATTR, attr)
    return int(attr.runtime)


@contextlib.contextmanager
def sliced(ns: int | None) -> Iterator[None]:
    """Within, this thread's slice is `ns` (None: as it is), so the processes it starts inherit it."""
    if ns is None:
        yield
        return
    before = slice_ns()
    _sched(_SCHED_SETATTR, _Attr(size=ctypes.sizeof(_Attr), runtime=ns))
    try:
        yield
    finally:
        _sched(_SCHED_SETATTR, _Attr(size=ctypes.sizeof(_Attr), runtime=before))


def way_slice(way: str) -> tuple[str, int | None]:
    """A way's kind and its slice in ns: together@5 is together with slices of 5 ms."""
    kind, _, ms = way.partition("@")
    if kind not in WAYS or (ms and kind != "together"):
        raise argparse.ArgumentTypeError(f"{way!r}: a way is turns, together, together@MS or apart")
    return kind, round(float(ms) * 1e6) if ms else None


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
    ap.add_argument("--ways", default=",".join(WAYS), help="comma-separated: turns, together, together@MS, apart")
    args = ap.parse_args()
    ways = args.ways.split(",")
    try:
        kinds = {way: way_slice(way) for way in ways}
    except argparse.ArgumentTypeError as e:
        sys.exit(f"together: {e}")
    study = read_study(find_study("lua-vms"))
    builds = build_study(study, args.build_dir / "lua-vms", [args.a, args.b])
    for name, built in builds.items():
        if not built.available:
            sys.exit(f"together: {name} is unavailable: {built.reason}")
    param = study.benchmarks[args.benchmark].param
    # as a block sizes them: rounds of one turn each, a turn as many iterations as take about as long as the other's
    # (together without the like-with-like rule, lockstep.turns); one after the other as many as taking turns
    asked = [args.iterations_a, args.iterations_b or args.iterations_a]
    sizes = {way: lockstep.turns(asked, like_with_like=kinds[way][0] != "together") for way in ways}
    sides = {way: [(args.a, rounds * each[0]), (args.b, rounds * each[1])] for way, (rounds, each) in sizes.items()}
    commands = {way: [command_for(study, builds[m], args.benchmark, param, k) for m, k in sides[way]] for way in ways}
    cpu = lockstep.lock_cpu()
    rng = random.Random(args.seed)
    ratios: dict[str, list[float]] = {w: [] for w in ways}
    means: dict[str, list[tuple[float, float]]] = {w: [] for w in ways}
    for way in ways:
        (a, na), (b, nb) = sides[way]
        print(f"{way}: {b} ({nb} iterations, turns of {sizes[way][1][1]}) over {a} ({na}, turns of {sizes[way][1][0]})"
              f" on {args.benchmark} ({param})", flush=True)
    print(f"{args.blocks} blocks each way, CPU {cpu}; the kernel's slice {slice_ns() / 1e6:g} ms", flush=True)
    for block in range(args.blocks):
        for way in rng.sample(ways, len(ways)):
            kind, ns = kinds[way]
            with sliced(ns):
                times = run(kind, commands[way], [k for _, k in sides[way]], sizes[way][1], cpu,
                            f"{args.seed}:{block}")
            a, b = (steady(t, args.skip) for t in times)
            ratios[way].append(math.log(b / a))
            means[way].append((a, b))
        print(f"block {block + 1} of {args.blocks} done", flush=True)
    print("| way | B / A (99 %) | sd of the blocks' log ratios | A's mean iteration | B's |")
    print("|---|---|---|---|---|")
    for way in ways:
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
        done = lockstep.run_block(members, timeout_s=600.0, seed=seed, cpu=cpu,
                                  turns=TOGETHER if way == "together" else SEPARATE)
    for r in done:
        if r.status != OK or r.output is None:
            sys.exit(f"together: a {way} execution failed: {r.status}: {r.detail}")
    return [list(r.output.times) for r in done if r.output is not None]


def steady(times: list[float], skip: float) -> float:
    return statistics.fmean(times[int(len(times) * skip):])


if __name__ == "__main__":
    sys.exit(main())
