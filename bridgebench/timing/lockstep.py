"""Lock-step blocks: one fresh process per mechanism of a benchmark, all pinned to one CPU, taking turns
iteration by iteration in an order drawn afresh every round.

This VM's speed steps by 10–50 % for 50 ms to minutes, one vCPU at a time. Processes that live at the same
time on the same vCPU and take turns see the same steps, so the ratio of their adjacent turns cancels them
(docs/methodology.md §12). The probe speaks the stepped mode of the protocol (protocol.py): once set up it
says READY, then runs one iteration for each "g" it reads on stdin and answers with that iteration's seconds
on a line; after its last iteration it prints its JSON object as in batch mode and exits.

Interleaved (`run --turns interleaved`), the members whose turns are equal take them together, one iteration
each in an order drawn for every iteration, so that a VM's and its twin's iterations stay adjacent in time
however long the turn an interpreter beside them makes necessary (docs/methodology.md §13).

Together (`run --turns together`), every member takes its turn at the same time: the harness says go to all of
them at once, the kernel's scheduler shares the CPU among them slice by slice (a few milliseconds), and each
iteration is timed by the CPU time of the member's processes (the probe's own CPU clock where it reports one and
is the member's only process, else the kernel's process CPU clock read by the harness: every thread, none of the
waiting), not by the wall clock the probe answers with, which then holds the others' slices too. Speed steps
longer than a slice fall on every member alike, where separate turns share only those longer than a round; what
each member pays for the switches differs by mechanism, so it suits a VM against its twin (docs/methodology.md
§13, "Together").

A block stores one execution per member, as a sequential campaign does; each carries its place in the block
(`pairing` in the probe's other fields): the block's token, the CPU, its turn (iterations a turn), the
rounds, and its position in each round's drawn order. A member that answers out of turn, too late, with
something that is not a number, or dies mid-block fails with the reason; the others go on while two or more
are left. The last one left is stopped (ABANDONED): a process stepped alone runs in another regime (25 %
slower here, methodology §13), so its later iterations would be neither paired nor like its earlier ones; the
campaign runs it again alone, in batch mode (campaign/timing.py).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import random
import select
import signal
import statistics
import subprocess
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from bridgebench import audit
from bridgebench.affinity import spawning_on
from bridgebench.protocol import ProtocolError, parse
from bridgebench.runner import (
    ABANDONED,
    CRASHED,
    MAX_STDOUT,
    OK,
    PROTOCOL,
    SPAWN_FAILED,
    STDERR_TAIL,
    TIMEOUT,
    Capture,
    Execution,
    Running,
    UsageFile,
    how_it_ended,
    launcher,
    popen_wait,
    read_usage,
    stop,
)

READY = "bridgebench-stepped/1 ready"
NOT_STEPPED = "did not start in stepped mode"
STEPPED_ENV = "BRIDGEBENCH_STEPPED"
GO = b"g"
_CPUCLOCK_SCHED = 2  # the kernel's process-wide CPU clock: every thread's time, the ended ones' too
TIME_SLACK = 1e-6  # the JSON's times against the answered ones: both printed to at least 9 digits
SAME_TURN = 2.5  # members sized within this factor of the fewest take turns of one iteration alike (turns())


@dataclass(frozen=True)
class Member:
    """One process of a block: what to run, its iterations (lead + rounds × turn), its turn, and its lead:
    iterations it makes before the first round, unpaired (what a campaign knows is not steady: a JIT's
    warm-up, an interpreter's first iteration), so that its turns are all steady ones."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    iterations: int
    turn: int = 1
    lead: int = 0


def lock_cpu() -> int | None:
    """The CPU a block's processes share: the highest this harness may use (CPU 0 takes interrupts on
    most machines), or None when the harness may use only one (nothing to separate the harness from)."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1] if len(cpus) > 1 else None


def turns(iterations: list[int], like_with_like: bool = True) -> tuple[int, list[int]]:
    """Rounds and each member's turn so that a round's turns take similar time: every member was sized to
    about the same time per execution (so fewer iterations means longer ones), and the member with the fewest
    takes one iteration a turn, the others as many as make the same share of their execution, rounded up: a
    member never makes fewer iterations than it was sized to (a JIT's 50, so that its warm-up is classified,
    would otherwise become 48 beside a member of 8).
    Like with like: every member sized within SAME_TURN of the fewest also takes one iteration a turn, and the
    rounds are as many as the most of those was sized to. A turn's first iteration is not like the others
    (docs/methodology.md §13), so a ratio between members whose turns differ in length carries that; members of
    about the same speed (a VM and its twin, two interpreters) whose sizes differ by noise would otherwise
    take turns of 1 and 2 iterations. Together (`like_with_like` False) there is no first iteration to match:
    what matters is that every member's turn lasts as long, so that none runs alone while the others wait."""
    least = max(1, min(iterations))
    rounds = max([least, *(n for n in iterations if like_with_like and n < SAME_TURN * least)])
    return rounds, [max(1, math.ceil(n / rounds)) for n in iterations]


@dataclass
class _Live:
    member: Member
    proc: subprocess.Popen[bytes] | None
    usage_path: str
    stdin: int = -1
    stdout: int = -1
    err: Capture | None = None
    buffer: bytearray = field(default_factory=bytearray)
    answered: list[float] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    failure: tuple[str, str] | None = None  # (status, detail) once it failed
    started: float = 0.0
    t0: float = 0.0
    usage: dict[str, float] = field(default_factory=dict)  # what the launcher wrote once the process ended
    ended: float | None = None
    tree: tuple[int, int] = (0, 0)  # the most processes and threads seen under its launcher
    launched: bool = False  # started under the launcher (runner.launcher), not alone
    together: bool = False  # it takes its turns at the same time as the others, timed by its CPU time
    pids: list[int] = field(default_factory=list)  # together: its processes once ready, whose CPU time is timed
    cpu: list[float] = field(default_factory=list)  # together: each iteration's CPU seconds, in order
    cpu_at: float = 0.0  # together: its processes' CPU time when the harness last said go (it was waiting)
    due: float = 0.0  # together: when the answer to the last go is late

    @property
    def alive(self) -> bool:
        return self.failure is None and self.proc is not None

    @property
    def waiting(self) -> bool:
        """Alive with iterations to go: nothing on its stdout is expected until the harness says go."""
        return self.alive and len(self.answered) < self.member.iterations


def _spawn(member: Member, cpu: int | None, launch: Path | None, usage: UsageFile) -> _Live:
    command = [str(launch), usage.path, *member.argv] if launch else member.argv
    env = {**member.env, STEPPED_ENV: "1"}
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    live = _Live(member, None, usage.path, started=time.time(), t0=time.monotonic())
    try:
        with spawning_on(cpu):
            live.proc = subprocess.Popen(command, stdin=in_r, stdout=out_w, stderr=err_w, env=env, cwd=member.cwd,
                                         start_new_session=True, pass_fds=(usage.fd,) if launch else ())
    except OSError as e:
        live.failure = (SPAWN_FAILED, f"cannot start {member.argv[0]}: {e.strerror}")
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        return live
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    live.stdin, live.stdout, live.launched = in_w, out_r, launch is not None
    live.err = Capture(err_r, STDERR_TAIL, keep_tail=True)
    live.err.start()
    return live


def _tree(root: int) -> dict[int, int]:
    """The processes under `root` (the launcher, a subreaper, so nothing that daemonises escapes), each with
    its number of threads, from /proc."""
    parents: dict[int, tuple[int, int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue  # it ended while we looked
            parents[int(entry.name)] = (int(fields[1]), int(fields[17]))  # ppid, num_threads
    found, frontier = [], [root]
    while frontier:
        frontier = [pid for pid, (ppid, _) in parents.items() if ppid in frontier]
        found += frontier
    return {pid: parents[pid][1] for pid in found}


def _descendants(root: int) -> tuple[int, int]:
    """How many processes are under `root`, and their threads: a member with more than one thread (Go's
    runtime, a plugin's RPC server) shares the block's CPU with itself, which the report says."""
    tree = _tree(root)
    return len(tree), sum(tree.values())


def _cpu_seconds(pids: list[int]) -> float:
    """The CPU time these processes have spent, all threads (clock_getcpuclockid's clock, in Linux's encoding:
    Python has no call for it). Raises OSError once one of them has ended."""
    return sum(time.clock_gettime(((~pid) << 3) | _CPUCLOCK_SCHED) for pid in pids)


def _look(live: _Live) -> None:
    if live.alive and live.proc is not None:
        processes, threads = _descendants(live.proc.pid)
        live.tree = (max(live.tree[0], processes), max(live.tree[1], threads))


def _kill(*lives: _Live) -> None:
    """Stop members, all at once (runner.stop)."""
    stop([Running(x.proc.pid, x.launched, popen_wait(x.proc)) for x in lives
          if x.proc is not None and x.proc.poll() is None])


def _fail(live: _Live, status: str, detail: str) -> None:
    if live.failure is None:
        live.failure = (status, detail)
        _kill(live)


def _read(live: _Live) -> bool:
    """What the member has written, into its buffer (stdout is ready); False, and it fails, at end of output."""
    chunk = os.read(live.stdout, 1 << 16)
    if not chunk:
        _fail(live, CRASHED, f"ended mid-block, after iteration {len(live.answered)}")
        return False
    live.buffer += chunk
    return True


def _pop_line(live: _Live) -> str:
    """The first line in the member's buffer (there is one), taken out of it."""
    line, _, rest = bytes(live.buffer).partition(b"\n")
    live.buffer = bytearray(rest)
    return line.decode("utf-8", errors="replace").strip()


def _line(live: _Live, deadline: float) -> str | None:
    """The member's next line on stdout, or None at end of output or past the deadline (its failure says
    which)."""
    while b"\n" not in live.buffer:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([live.stdout], [], [], left)[0]:
            _fail(live, TIMEOUT, "no answer in time")
            return None
        if not _read(live):
            return None
    return _pop_line(live)


def _out_of_turn(lives: list[_Live]) -> None:
    """A member that printed while it was not its turn fails: it is not waiting for the harness. What it
    printed is seen if it is there before the harness's next go (a line that arrives later is read as an
    answer, and fails as one that is not a number)."""
    waiting = [x for x in lives if x.waiting]
    if not waiting:
        return
    ready = select.select([x.stdout for x in waiting], [], [], 0)[0]
    for x in waiting:
        if x.stdout in ready and not x.buffer and not _read(x):
            continue
        if x.buffer:
            _fail(x, PROTOCOL, "printed while it was not its turn (a probe without the stepped mode, or one that "
                  "does not wait for the harness)")


def _step(live: _Live, index: int, step_timeout_s: float) -> None:
    try:
        os.write(live.stdin, GO)
    except OSError:
        _fail(live, CRASHED, f"ended mid-block, before iteration {index + 1}")
        return
    line = _line(live, time.monotonic() + step_timeout_s)
    if line is None:
        if live.failure and live.failure[0] == TIMEOUT:
            live.failure = (TIMEOUT, f"no answer to iteration {index + 1} within {step_timeout_s:g} s; killed")
        return
    _accept(live, line, index)


def _accept(live: _Live, line: str, index: int) -> bool:
    """Take the member's answer to iteration `index`, or fail it: the answer is a number of seconds."""
    try:
        seconds = float(line)
    except ValueError:
        _fail(live, PROTOCOL, f"answered iteration {index + 1} with {line[:80]!r}, not its seconds")
        return False
    if not 0 <= seconds < 1e6:
        _fail(live, PROTOCOL, f"answered iteration {index + 1} with {seconds!r} seconds")
        return False
    live.answered.append(seconds)
    return True


def _go_together(live: _Live, index: int, step_timeout_s: float) -> None:
    """Say go to one member of a together turn. Its processes' CPU time is read first, while it waits for the go:
    that reading is exact, where one taken while it runs lacks its time since the scheduler last booked it (up to
    a tick), so an iteration's CPU time is the time from its go to the next one, and its answer's little after."""
    try:
        now = _cpu_seconds(live.pids)
    except OSError:
        _fail(live, CRASHED, f"a process of it ended mid-block, before iteration {index + 1}")
        return
    if len(live.cpu) < len(live.answered):  # the iteration before this go
        live.cpu.append(now - live.cpu_at)
    live.cpu_at = now
    try:
        os.write(live.stdin, GO)
    except OSError:
        _fail(live, CRASHED, f"ended mid-block, before iteration {index + 1}")
        return
    live.due = time.monotonic() + step_timeout_s


def _together(lives: list[_Live], plan: dict[int, tuple[int, int]], order: list[int], step_timeout_s: float) -> None:
    """Members take their turns at the same time: `plan` gives each its first iteration and how many it makes
    now. The harness says go to every one (in `order`), then to each again as soon as it has answered, until
    each has made its iterations; the scheduler shares the CPU among those still running. A member's last
    iteration has no next go: its CPU time is read once it has answered (it may miss up to a tick), or, if it has
    ended by then, not at all (_cpu_times). Where the probe reports its own CPU time, that is used instead."""
    count = {i: plan[i][1] for i in order if plan[i][1] and lives[i].alive}
    made = dict.fromkeys(count, 0)
    for i in count:
        _go_together(lives[i], plan[i][0], step_timeout_s)
    while True:
        running = [i for i in count if lives[i].alive and made[i] < count[i]]
        if not running:
            return
        left = min(lives[i].due for i in running) - time.monotonic()
        ready = select.select([lives[i].stdout for i in running], [], [], max(0.0, left))[0]
        for i in running:
            live, index = lives[i], plan[i][0] + made[i]
            if live.stdout not in ready:
                if time.monotonic() >= live.due:
                    _fail(live, TIMEOUT, f"no answer to iteration {index + 1} within {step_timeout_s:g} s; killed")
                continue
            if not _read(live) or b"\n" not in live.buffer:
                continue
            line = _pop_line(live)
            if live.buffer and index + 1 < live.member.iterations:  # one go, one line (after its last: its JSON)
                _fail(live, PROTOCOL, "printed while it was not its turn (a probe without the stepped mode, or one "
                      "that does not wait for the harness)")
                continue
            if not _accept(live, line, index):
                continue
            made[i] += 1
            if len(live.answered) == live.member.iterations:  # its last: no go follows
                with contextlib.suppress(OSError):  # ended already: _finish reads it from what the launcher says
                    live.cpu.append(_cpu_seconds(live.pids) - live.cpu_at)
            elif made[i] < count[i]:
                _go_together(live, index + 1, step_timeout_s)


def _finish(live: _Live, timeout_s: float) -> Execution:
    """Its end: the exit, the JSON object, and the checks that it is the run the harness drove."""
    rest = Capture(live.stdout, MAX_STDOUT, keep_tail=False) if live.proc else None
    if live.proc is not None:
        with contextlib.suppress(OSError):
            os.close(live.stdin)  # a probe still reading gets end of input
        if rest:
            rest.start()
        running = live.failure is None or live.failure[1].startswith(NOT_STEPPED)
        try:
            live.proc.wait(timeout_s if running else 10.0)
        except subprocess.TimeoutExpired:
            _kill(live)
            if live.failure is None:
                live.failure = (TIMEOUT, f"no result within {timeout_s:g} s of its last turn; killed")
            live.proc.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(live.proc.pid, signal.SIGKILL)
        if rest:
            rest.join(10.0)
        if live.err:
            live.err.join(10.0)
    wall_s = (live.ended or time.monotonic()) - live.t0
    usage = live.usage = read_usage(live.usage_path)
    peak = int(usage["maxrss_kb"]) if "maxrss_kb" in usage else None
    tail = live.err.text() if live.err else ""
    code = live.proc.returncode if live.proc else None

    def failed(status: str, detail: str) -> Execution:
        return Execution(status, detail, code, tail, None, peak, live.started, wall_s)

    if live.failure:
        status, detail = live.failure
        if status == CRASHED and code not in (0, None) and live.proc is not None:
            detail = f"{detail}; {how_it_ended(code, tail)}"
        return failed(status, detail)
    assert code is not None  # a process that never started has failed above
    if code != 0:
        return failed(CRASHED, how_it_ended(code, tail))
    text = bytes(live.buffer).decode("utf-8", errors="replace") + (rest.text() if rest else "")
    if rest and rest.overflowed:
        return failed(PROTOCOL, f"stdout larger than {MAX_STDOUT} bytes")
    try:
        output = parse(text, live.member.iterations)
    except ProtocolError as e:
        return failed(PROTOCOL, str(e))
    if any(abs(a - b) > TIME_SLACK * max(a, b, 1e-3) for a, b in zip(output.times, live.answered, strict=True)):
        return failed(PROTOCOL, "the times in its JSON object differ from the times it answered turn by turn")
    if live.together:  # its iterations are its CPU seconds; the wall time it answered held the others' too
        cpu, source = _cpu_times(live, output.counters.get("cpu_s"), usage)
        if cpu is None:
            return failed(PROTOCOL, source)
        output = replace(output, times=cpu, info={**output.info, "wall_times": list(output.times), "cpu_from": source})
    return Execution(OK, "", code, tail, output, peak, live.started, wall_s)


PROBE_CPU, HARNESS_CPU = "probe", "harness"


def _cpu_times(live: _Live, counter: list[float] | None, usage: dict[str, float]) -> tuple[list[float] | None, str]:
    """A together member's iterations in CPU seconds, and where they come from: the probe's own CPU time around
    each timed call (its `cpu_s` counter, read inside the process: exact, and the timed call alone) where the
    member is that one process, else the harness's readings from go to go, which hold every process it had when
    it said it was ready (an RPC plugin's server does the work the probe's clock does not see). A probe that has
    ended before its last iteration's could be read has it from its whole CPU time (the launcher's), which then
    holds its exit too. None, and why, if neither is there."""
    n = live.member.iterations
    alone = len(live.pids) <= 1
    if alone and counter is not None and len(counter) == n and all(0 <= c < math.inf for c in counter):
        return list(counter), PROBE_CPU
    cpu = list(live.cpu)
    if len(cpu) == n - 1 and "user_s" in usage and "sys_s" in usage:
        cpu.append(usage["user_s"] + usage["sys_s"] - live.cpu_at)
    if len(cpu) != n or any(c < 0 for c in cpu):
        return None, "its CPU time per iteration could not be read (it has no cpu_s counter, and it ended first)"
    return cpu, HARNESS_CPU


def _abandon_a_lone_survivor(lives: list[_Live], round_: int) -> None:
    """Before each round: a block whose other members have all failed stops its last one."""
    alive = [x for x in lives if x.alive]
    if len(lives) > 1 and len(alive) == 1:
        gone = "; ".join(f"{x.failure[0]}" for x in lives if x.failure)
        _fail(alive[0], ABANDONED, f"stopped before round {round_ + 1}: the other members of its block ended "
              f"({gone}), and stepped alone a process runs in another regime")


def shared_turns(members: list[Member], interleave: bool) -> list[list[int]]:
    """The units a round's order is drawn over: each member alone, or (interleaved) the members whose turns are
    equal together, in the members' order."""
    if not interleave:
        return [[i] for i in range(len(members))]
    units: dict[int, list[int]] = {}
    for i, m in enumerate(members):
        units.setdefault(m.turn, []).append(i)
    return list(units.values())


def run_block(members: list[Member], *, timeout_s: float, seed: object, cpu: int | None = None,
              step_timeout_s: float | None = None, interleave: bool = False,
              together: bool = False) -> list[Execution]:
    """Run one block: every member started pinned to `cpu`, each READY within timeout_s, then each member's
    lead, one member after another, then rounds in which
    each member still alive takes its turn once (its `turn` iterations), in an order drawn from `seed` (so a
    resumed campaign draws the same orders). Interleaved, members whose turns are equal take them together:
    one iteration each, in an order drawn afresh for each of the turn's iterations, so that their iterations
    are adjacent in time however long the turn (a VM and its twin beside an interpreter's long turns).
    Together, every member takes its turn (and its lead) at the same time, timed by its CPU time (_together);
    the drawn order is then only the order the harness says go in.
    Returns one Execution per member, in the members' order."""
    if not members:
        return []
    if interleave and together:
        raise ValueError("run_block(): turns are taken interleaved or together, not both")
    rounds = {(m.iterations - m.lead) // m.turn for m in members}
    if len(rounds) != 1 or any((m.iterations - m.lead) % m.turn or not 0 <= m.lead < m.iterations
                               for m in members):
        raise ValueError("run_block(): every member's iterations after its lead must be the same number of its "
                         "turns")
    n_rounds = rounds.pop()
    units = shared_turns(members, interleave)
    step_limit = step_timeout_s if step_timeout_s is not None else timeout_s
    rng = random.Random(str(seed))
    token = uuid.uuid4().hex[:12]
    launch = launcher()
    harness = os.sched_getaffinity(0)
    if cpu is not None and harness - {cpu}:  # the harness, its threads and its audit keep off the block's CPU
        os.sched_setaffinity(0, harness - {cpu})
    with contextlib.ExitStack() as files:
        files.callback(os.sched_setaffinity, 0, harness)
        usage_files = [files.enter_context(UsageFile()) for _ in members]
        before = audit.sample()
        t0 = time.monotonic()
        lives = [_spawn(m, cpu, launch, u) for m, u in zip(members, usage_files, strict=True)]
        try:
            deadline = time.monotonic() + timeout_s
            for live in lives:
                if live.alive:
                    first = _line(live, deadline)
                    if first is not None and first != READY:
                        # A probe without the stepped mode runs its batch to its end, as it would alone:
                        # killed mid-run, a database's client (GT.M) leaves its shared memory behind.
                        live.failure = (PROTOCOL, f"{NOT_STEPPED}: its first line is {first[:60]!r}, not {READY!r}")
                    elif first is None and live.failure and live.failure[0] == TIMEOUT:
                        live.failure = (TIMEOUT, f"not ready within {timeout_s:g} s; killed")
                    elif first is None and live.failure:
                        live.failure = (live.failure[0], f"{NOT_STEPPED}: it ended before it said it was ready")
                    _look(live)
                    if together and live.alive and live.proc is not None:  # set up: the processes it is (not
                        #                                 the launcher, whose usage file leaves it out too)
                        tree = list(_tree(live.proc.pid))
                        live.together, live.pids = True, tree if live.launched else [live.proc.pid, *tree]
            if together:  # the leads at the same time too, so that every iteration is timed alike
                _out_of_turn(lives)
                _together(lives, {i: (0, m.lead) for i, m in enumerate(members)}, list(range(len(lives))),
                          step_limit)
            for live in lives if not together else []:  # the leads, one member after another: nothing is paired
                for k in range(live.member.lead):
                    _out_of_turn(lives)
                    if not live.alive:
                        break
                    _step(live, k, step_limit)
            starts = []  # each round's start, and the last one's end: what a round lasts
            for r in range(n_rounds):
                starts.append(time.monotonic())
                _abandon_a_lone_survivor(lives, r)
                order = list(range(len(units)))
                rng.shuffle(order)
                if together:
                    _out_of_turn(lives)  # before anyone is told to go, as before each separate step
                    for position, u in enumerate(order):
                        lives[units[u][0]].positions.append(position)
                    _together(lives, {i: (m.lead + r * m.turn, m.turn) for i, m in enumerate(members)},
                              [units[u][0] for u in order], step_limit)
                    if r == n_rounds - 1:
                        for live in lives:
                            if live.alive:
                                live.ended = time.monotonic()
                                _look(live)
                    continue
                for position, u in enumerate(order):
                    unit = units[u]
                    for i in unit:
                        lives[i].positions.append(position)
                    turn = members[unit[0]].turn  # a unit's members have the same turn
                    for k in range(turn):
                        steps = list(unit)
                        rng.shuffle(steps)  # a unit of one draws nothing: separate turns draw as they always did
                        for i in steps:
                            live = lives[i]
                            _out_of_turn(lives)
                            if live.alive:
                                _step(live, live.member.lead + r * turn + k, step_limit)
                    for i in unit:
                        if lives[i].alive and r == n_rounds - 1:
                            lives[i].ended = time.monotonic()
                            _look(lives[i])  # after its last turn, before its end: every thread it made is there
            starts.append(time.monotonic())
            runs = [_finish(live, timeout_s) for live in lives]
        except BaseException:
            _kill(*lives)
            raise
        wall_s = time.monotonic() - t0
        after = audit.sample()
        usages = [live.usage for live in lives]  # as _finish read them
    # the median round's wall time, every member's turn and the hand-offs: the machine's speed steps shorter
    # than this are not shared by the two sides of a ratio, so taking turns does not cancel them
    round_s = statistics.median(b - a for a, b in itertools.pairwise(starts)) if len(starts) > 1 else None
    cpu_total = sum(u.get("user_s", 0.0) + u.get("sys_s", 0.0) for u in usages)
    measured = [sum(r.output.times) if r.output else 0.0 for r in runs]
    machine = audit.audit(before, after, wall_s, cpu_total if all("user_s" in u for u in usages) else None)
    out = []
    others_in_unit = {i: len(unit) - 1 for unit in units for i in unit}
    for i, (live, run) in enumerate(zip(lives, runs, strict=True)):
        share = wall_s * measured[i] / sum(measured) if sum(measured) > 0 else wall_s / len(runs)
        pairing = {"block": token, "cpu": cpu, "turn": live.member.turn, "lead": live.member.lead,
                   "rounds": n_rounds, "members": len(members), "positions": live.positions, "block_wall_s": wall_s,
                   "round_s": round_s,
                   "processes": live.tree[0], "threads": live.tree[1], "interleaved_with": others_in_unit[i],
                   "together": together}
        if run.output is not None:
            run = replace(run, output=replace(run.output, info={**run.output.info, "pairing": pairing}))
        # Its wall time is its share of the block's (by the time its iterations took), so that the campaign's
        # clock and the δ by execution length count each block once.
        out.append(replace(run, wall_s=share, machine=machine))
    return out
