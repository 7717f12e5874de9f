"""Why a lock-step turn's first iteration is slow (issue #40): takes the cost that evidence/turn_first.py reads
from stored campaigns apart by what runs on the CPU between two of a benchmark's turns. One benchmark process
(the Lua probe, stepped) is pinned to the block's CPU and makes turns of --turn iterations; between two turns
the harness puts, in a drawn order over fresh processes:

- nothing: the next turn at once (what is left is the benchmark's own rhythm: a collector's cycle in step
  with the turn, not the turn);
- idle: the harness sleeps as long as the turn took, with nothing on the CPU;
- L1 loop: the constant probe (probes/c/constant.c) over 32 KiB for as long: the CPU busy, the caches hardly
  touched;
- sweep 8 MiB / sweep 64 MiB: the constant probe over an array larger than the second-level cache, then larger
  than the third;
- the benchmark again: a second process of the same benchmark taking the other turns, as a block's members do;
- long idle, long L1 loop, long sweep 64 MiB: as above, ten times as long (whether the time away matters: in a
  default block four other members take their turns between two of LuaJIT's, PUC Lua among them);
- PUC Lua 5.1: the same benchmark on lua5.1, one iteration between two turns, as in a default block;
- the default's others: what a default block puts between two of LuaJIT's turns, four other processes of the
  same benchmark taking their turns in an order drawn each round: LuaJIT again (for OpenResty's luajit2, a
  turn as long), PUC Lua 5.1, PUC Lua 5.4 and LuaJIT with its JIT off (one iteration each, as the default's
  like-with-like turns give an interpreter beside a JIT).

Each process first makes --lead iterations back to back (its warm-up), then --rounds turns. Per process, the
log of its turns' first iterations' mean over the mean of the turns' other iterations; the table gives, per
benchmark and filler, the factor's mean over --repetitions processes with its 99 % interval (Student's t).
With --whole-turns, what a filler costs whole turns instead (what a lock-step ratio counts): per process the log
of the mean of all its turns' iterations, and per filler its mean over the processes set against the filler
"nothing"'s (turns back to back: the process as if alone), with Welch's 99 % interval; then --turn may be 1.
With --paired, each process is set against itself: its rounds drawn half after a filler of processes and half
right after its own turn, the log of the first half's iterations' mean over the second's (then --turn may be 1;
an odd --rounds makes one round fewer).
A benchmark of the harness's method on this machine, not a test; its figures go to docs/methodology.md §13.

    .venv/bin/python evidence/turn_cause.py [--vm luajit] [--benchmarks deltablue,json,md5,knucleotide]
                                            [--turn 4] [--rounds 30] [--repetitions 6]
    .venv/bin/python evidence/turn_cause.py --benchmarks havlak,json,fannkuch --fillers "the default's others" \
                                            --paired --turn 1 [--vm lua5.1]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turn_cost import build, pass_s  # evidence/turn_cost.py, beside this script

from bridgebench.stats.bootstrap import Estimate
from bridgebench.stats.executions import over_executions, ratio_over_executions
from bridgebench.timing import lockstep

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "studies" / "lua-vms"
READY = b"bridgebench-stepped/1 ready\n"
FILLERS = ("nothing", "idle", "L1 loop", "sweep 8 MiB", "sweep 64 MiB", "the benchmark again", "long idle",
           "long L1 loop", "long sweep 64 MiB", "PUC Lua 5.1", "the default's others")
SWEEP_CELLS = {"L1 loop": 4096, "sweep 8 MiB": 1 << 20, "sweep 64 MiB": 1 << 23}  # doubles
LONG = 10  # a long filler lasts as long as this many of the benchmark's turns
VMS = {"luajit": ("luajit", "/usr/include/luajit-2.1"), "lua5.4": ("lua5.4", "/usr/include/lua5.4"),
       "lua5.1": ("lua5.1", "/usr/include/lua5.1")}
# The default's others, as each runs the probe (argv before the probe's path) and which bbclock it loads.
OTHERS = (("luajit", ["luajit"]), ("lua5.1", ["lua5.1"]), ("lua5.4", ["lua5.4"]), ("luajit", ["luajit", "-joff"]))


class Stepped:
    """One process in the probe protocol's stepped mode, pinned to one CPU."""

    def __init__(self, argv: list[str], env: dict[str, str], cpu: int, iterations: int, err: Path) -> None:
        self.left = iterations
        self.err = err
        with err.open("wb") as sink:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink,
                                         env={**env, "BRIDGEBENCH_STEPPED": "1"},
                                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.out, self.into = self.proc.stdout, self.proc.stdin
        if self.out.readline() != READY:
            self.fail("did not say it was ready")

    def fail(self, what: str) -> None:
        self.proc.kill()
        self.proc.wait()
        sys.exit(f"{' '.join(map(str, self.proc.args))}: {what}: {self.err.read_text().strip()[-300:]}")

    def step(self) -> float:
        self.into.write(b"g")
        self.into.flush()
        line = self.out.readline()
        try:
            seconds = float(line)
        except ValueError:
            self.fail(f"answered {line!r}")
        self.left -= 1
        return seconds

    def end(self) -> None:
        if self.left:
            self.fail(f"{self.left} iterations were not asked for")
        self.out.read()
        if self.proc.wait() != 0:
            self.fail(f"exit status {self.proc.returncode}")


def build_clock(folder: Path, vm: str) -> None:
    """bbclock for the VM, beside the constant probe (turn_cost.build)."""
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{VMS[vm][1]}", str(REPO / "probes" / "lua" / "bbclock.c"),
                    "-o", str(folder / "bbclock.so")], check=True)


def params() -> dict[str, str]:
    out = {}
    for line in (STUDY / "benchmarks" / "PARAMS.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            out[line.split()[0]] = line.split()[1]
    return out


def partners(kind: str, bench: list[str], env: dict[str, str], tmp: Path, args: argparse.Namespace, cpu: int,
             rounds: int | None = None) -> list[tuple[Stepped, int]]:
    """The processes that take their turns between two of the benchmark's, started and past their lead, each with
    its iterations a turn: the benchmark again (as many as the benchmark, after the same lead), PUC Lua 5.1 (one),
    or the default's others (LuaJIT again as the benchmark again, the rest one each); none for other fillers.
    Each makes its turns in `rounds` rounds (all of --rounds unless told)."""
    if kind == "the benchmark again":
        specs = [(bench[:1], env, args.turn, args.lead)]
    elif kind == "PUC Lua 5.1":
        specs = [(["lua5.1"], env, 1, 0)]
    elif kind == "the default's others":
        specs = [(argv, {"PATH": os.environ["PATH"], "LUA_CPATH": str(tmp / vm / "?.so"), "LUA_PATH": ""},
                  args.turn if i == 0 else 1, args.lead if i == 0 else 0) for i, (vm, argv) in enumerate(OTHERS)]
    else:
        return []
    started = []
    for i, (prefix, penv, turn, lead) in enumerate(specs):
        total = lead + (args.rounds if rounds is None else rounds) * turn
        proc = Stepped([*prefix, *bench[1:-2], str(total), bench[-1]], penv, cpu, total, tmp / f"other{i}.err")
        for _ in range(lead):
            proc.step()
        started.append((proc, turn))
    return started


def one(filler: str, bench: list[str], env: dict[str, str], constant: Path, passes: dict[str, float],
        args: argparse.Namespace, cpu: int, tmp: Path, draw: random.Random) -> float:
    """One benchmark process under one filler: log(turns' first iterations' mean / the turns' others' mean), or
    with --whole-turns the log of its turns' mean."""
    total = args.lead + args.rounds * args.turn
    proc = Stepped(bench, env, cpu, total, tmp / "bench.err")
    kind, scale = (filler[5:], LONG) if filler.startswith("long ") else (filler, 1)
    other: Stepped | None = None  # the constant probe of a sweep filler
    block = partners(kind, bench, env, tmp, args, cpu)
    for _ in range(args.lead):
        proc.step()
    first: list[float] = []
    rest: list[float] = []
    for _ in range(args.rounds):
        turn = [proc.step() for _ in range(args.turn)]
        first.append(turn[0])
        rest.extend(turn[1:])
        spent = sum(turn) * scale
        if kind == "idle":
            time.sleep(spent)
        elif kind in SWEEP_CELLS:
            if other is None:  # started once the turn's length is known
                work = max(1, round(spent / passes[kind]))
                other = Stepped([str(constant), str(args.rounds), str(work), str(SWEEP_CELLS[kind])], {}, cpu,
                                args.rounds, tmp / "other.err")
            other.step()
        # several partners take their turns in an order drawn each round; one has none to draw (and leaves the
        # seed's later draws, the fillers' order, as they were)
        for member, turn in draw.sample(block, len(block)) if len(block) > 1 else block:
            for _ in range(turn):
                member.step()
    proc.end()
    for member in [other, *(m for m, _ in block)]:
        if member is not None:
            member.end()
    if args.whole_turns:
        return math.log(statistics.mean(first + rest))
    return math.log(statistics.mean(first) / statistics.mean(rest))


def paired(filler: str, bench: list[str], env: dict[str, str], args: argparse.Namespace, cpu: int, tmp: Path,
           draw: random.Random) -> float:
    """One benchmark process, its rounds drawn half after the filler's processes took their turns and half right
    after its own turn: log(the first half's iterations' mean / the second half's), the process set against
    itself."""
    after = [True, False] * (args.rounds // 2)
    draw.shuffle(after)
    total = args.lead + len(after) * args.turn
    proc = Stepped(bench, env, cpu, total, tmp / "bench.err")
    block = partners(filler, bench, env, tmp, args, cpu, rounds=sum(after))
    for _ in range(args.lead):
        proc.step()
    times: dict[bool, list[float]] = {True: [], False: []}
    for filled in after:
        if filled:
            for member, turn in draw.sample(block, len(block)):
                for _ in range(turn):
                    member.step()
        times[filled].extend(proc.step() for _ in range(args.turn))
    proc.end()
    for member, _ in block:
        member.end()
    return math.log(statistics.mean(times[True]) / statistics.mean(times[False]))


def _alone(xs: list[float]) -> str:
    """The factor's geometric mean over the processes, with Student's 99 % interval."""
    return _said(over_executions([math.exp(x) for x in xs], confidence=0.99))


def _against(xs: list[float], alone: list[float]) -> str:
    """The processes' geometric mean over the alone ones', with Welch's 99 % interval."""
    return _said(ratio_over_executions([math.exp(x) for x in alone], [math.exp(x) for x in xs], confidence=0.99))


def _said(e: Estimate | None) -> str:
    assert e is not None and e.low is not None and e.high is not None  # --repetitions is 3 or more
    return f"×{e.value:.3f} ({e.low:.3f}–{e.high:.3f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vm", choices=sorted(VMS), default="luajit")
    ap.add_argument("--benchmarks", default="deltablue,json,md5,knucleotide")
    ap.add_argument("--fillers", default=",".join(FILLERS))
    ap.add_argument("--turn", type=int, default=4)
    ap.add_argument("--lead", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--repetitions", type=int, default=6)
    ap.add_argument("--seed", default="turn-cause")
    ap.add_argument("--paired", action="store_true", help="each process against itself: its turns after the "
                    "filler's processes over its turns right after its own (a filler of processes only)")
    ap.add_argument("--whole-turns", action="store_true", help="each filler's turns' mean over the filler "
                    "'nothing''s (turns back to back), with Welch's interval")
    args = ap.parse_args()
    fillers = args.fillers.split(",")
    if unknown := [f for f in fillers if f not in FILLERS]:
        sys.exit(f"unknown filler {unknown[0]!r}: choose from {', '.join(FILLERS)}")
    if args.paired and (set(fillers) - {"the benchmark again", "PUC Lua 5.1", "the default's others"}
                        or args.whole_turns or args.rounds < 2):
        sys.exit("--paired takes fillers of processes only (the benchmark again, PUC Lua 5.1, the default's "
                 "others), not --whole-turns, and 2 rounds or more")
    if args.whole_turns and "nothing" not in fillers:
        sys.exit("--whole-turns sets each filler against 'nothing': name it among the fillers")
    if args.turn < (1 if args.whole_turns or args.paired else 2) or args.repetitions < 3:
        sys.exit("--turn must be 2 or more (a turn's first against its others; 1 with --whole-turns or --paired), "
                 "--repetitions 3 or more")
    cpu = lockstep.lock_cpu()
    if cpu is None:
        sys.exit("this harness may use one CPU only: nothing to pin the benchmark to apart from itself")
    os.sched_setaffinity(0, os.sched_getaffinity(0) - {cpu})
    sizes = params()
    draw = random.Random(args.seed)
    print(f"{args.vm}, turns of {args.turn} after {args.lead} iterations, {args.rounds} rounds, "
          f"{args.repetitions} processes a cell"
          f"{'; whole turns, each filler over nothing' if args.whole_turns else ''}"
          f"{'; paired: each process after the filler over itself right after its own turn' if args.paired else ''}; "
          f"started {time.strftime('%H:%M:%S', time.gmtime())} UTC", flush=True)
    print("| benchmark | " + " | ".join(fillers) + " |")
    print("|---|" + "---|" * len(fillers))
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        build_clock(tmp, args.vm)
        if "the default's others" in fillers:
            for vm in {vm for vm, _ in OTHERS}:
                (tmp / vm).mkdir()
                build_clock(tmp / vm, vm)
        constant = build(tmp)
        passes = {name: pass_s(constant, cells) for name, cells in SWEEP_CELLS.items()}
        env = {"PATH": os.environ["PATH"], "LUA_CPATH": str(tmp / "?.so"), "LUA_PATH": ""}
        for name in args.benchmarks.split(","):
            if name not in sizes:
                sys.exit(f"unknown benchmark {name!r}")
            bench = [VMS[args.vm][0], str(REPO / "probes" / "lua" / "probe.lua"),
                     str(STUDY / "benchmarks" / f"{name}.lua"), str(args.lead + args.rounds * args.turn), sizes[name]]
            logs: dict[str, list[float]] = {f: [] for f in fillers}
            for _ in range(args.repetitions):
                for filler in draw.sample(fillers, len(fillers)):
                    logs[filler].append(paired(filler, bench, env, args, cpu, tmp, draw) if args.paired
                                        else one(filler, bench, env, constant, passes, args, cpu, tmp, draw))
            cells = [_against(logs[f], logs["nothing"]) if args.whole_turns else _alone(logs[f]) for f in fillers]
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"ended {time.strftime('%H:%M:%S', time.gmtime())} UTC")
    return 0


if __name__ == "__main__":
    sys.exit(main())
