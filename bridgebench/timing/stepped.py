"""One process of a lock-step block (lockstep.py): started pinned in stepped mode, told to go an iteration at a time,
its answers read and checked, its end collected.

The probe speaks the stepped mode of the protocol (protocol.py): once set up it says READY, then runs one
iteration for each "g" it reads on stdin and answers with that iteration's seconds on a line; after its last
iteration it prints its JSON object as in batch mode and exits. A member that answers out of turn, too late,
with something that is not a number, or dies mid-block fails with the reason (fail), and is stopped.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bridgebench.affinity import spawning_on
from bridgebench.protocol import ProtocolError, parse
from bridgebench.runner import (
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
    popen_wait,
    read_usage,
    stop,
)

READY = "bridgebench-stepped/1 ready"
NOT_STEPPED = "did not start in stepped mode"
STEPPED_ENV = "BRIDGEBENCH_STEPPED"
GO = b"g"
TIME_SLACK = 1e-6  # the JSON's times against the answered ones: both printed to at least 9 digits


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
    solo: bool = False  # twins: it also takes a turn alone every round (lockstep.run_block), so iterations =
    # lead + 2 × rounds × turn
    at_once: bool = False  # twins: it takes its turns at the same time as the block's other members marked so


@dataclass
class Live:
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


def spawn(member: Member, cpu: int | None, launch: Path | None, usage: UsageFile) -> Live:
    command = [str(launch), usage.path, *member.argv] if launch else member.argv
    env = {**member.env, STEPPED_ENV: "1"}
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    live = Live(member, None, usage.path, started=time.time(), t0=time.monotonic())
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


def processes_under(root: int) -> dict[int, int]:
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


def descendants(root: int) -> tuple[int, int]:
    """How many processes are under `root`, and their threads: a member with more than one thread (Go's
    runtime, a plugin's RPC server) shares the block's CPU with itself, which the report says."""
    tree = processes_under(root)
    return len(tree), sum(tree.values())


def look(live: Live) -> None:
    if live.alive and live.proc is not None:
        processes, threads = descendants(live.proc.pid)
        live.tree = (max(live.tree[0], processes), max(live.tree[1], threads))


def kill(*lives: Live) -> None:
    """Stop members, all at once (runner.stop)."""
    stop([Running(x.proc.pid, x.launched, popen_wait(x.proc)) for x in lives
          if x.proc is not None and x.proc.poll() is None])


def fail(live: Live, status: str, detail: str) -> None:
    if live.failure is None:
        live.failure = (status, detail)
        kill(live)


def read(live: Live) -> bool:
    """What the member has written, into its buffer (stdout is ready); False, and it fails, at end of output."""
    chunk = os.read(live.stdout, 1 << 16)
    if not chunk:
        fail(live, CRASHED, f"ended mid-block, after iteration {len(live.answered)}")
        return False
    live.buffer += chunk
    return True


def pop_line(live: Live) -> str:
    """The first line in the member's buffer (there is one), taken out of it."""
    line, _, rest = bytes(live.buffer).partition(b"\n")
    live.buffer = bytearray(rest)
    return line.decode("utf-8", errors="replace").strip()


def next_line(live: Live, deadline: float) -> str | None:
    """The member's next line on stdout, or None at end of output or past the deadline (its failure says
    which)."""
    while b"\n" not in live.buffer:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([live.stdout], [], [], left)[0]:
            fail(live, TIMEOUT, "no answer in time")
            return None
        if not read(live):
            return None
    return pop_line(live)


def out_of_turn(lives: list[Live]) -> None:
    """A member that printed while it was not its turn fails: it is not waiting for the harness. What it
    printed is seen if it is there before the harness's next go (a line that arrives later is read as an
    answer, and fails as one that is not a number)."""
    waiting = [x for x in lives if x.waiting]
    if not waiting:
        return
    ready = select.select([x.stdout for x in waiting], [], [], 0)[0]
    for x in waiting:
        if x.stdout in ready and not x.buffer and not read(x):
            continue
        if x.buffer:
            fail(x, PROTOCOL, "printed while it was not its turn (a probe without the stepped mode, or one that "
                 "does not wait for the harness)")


def step(live: Live, index: int, step_timeout_s: float) -> None:
    try:
        os.write(live.stdin, GO)
    except OSError:
        fail(live, CRASHED, f"ended mid-block, before iteration {index + 1}")
        return
    line = next_line(live, time.monotonic() + step_timeout_s)
    if line is None:
        if live.failure and live.failure[0] == TIMEOUT:
            live.failure = (TIMEOUT, f"no answer to iteration {index + 1} within {step_timeout_s:g} s; killed")
        return
    accept(live, line, index)


def accept(live: Live, line: str, index: int) -> bool:
    """Take the member's answer to iteration `index`, or fail it: the answer is a number of seconds."""
    try:
        seconds = float(line)
    except ValueError:
        fail(live, PROTOCOL, f"answered iteration {index + 1} with {line[:80]!r}, not its seconds")
        return False
    if not 0 <= seconds < 1e6:
        fail(live, PROTOCOL, f"answered iteration {index + 1} with {seconds!r} seconds")
        return False
    live.answered.append(seconds)
    return True


def finish(live: Live, timeout_s: float) -> Execution:
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
            kill(live)
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
    return Execution(OK, "", code, tail, output, peak, live.started, wall_s)


