"""Run process executions: the plan (interleaved order), one fresh process per execution, timeouts,
peak RSS, and the classification of what went wrong when something did."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bridgebench import audit, instructions, native
from bridgebench.protocol import ProbeOutput, ProtocolError, parse

STDERR_TAIL = 2000
MAX_STDOUT = 64 * 1024 * 1024

# Statuses of a process execution.
OK = "ok"
CRASHED = "crashed"
TIMEOUT = "timeout"
PROTOCOL = "protocol violation"
SPAWN_FAILED = "spawn failed"
ABANDONED = "abandoned"  # the harness stopped it: alone, a lock-step member would run in another regime


@dataclass(frozen=True)
class Task:
    seq: int
    benchmark: str
    mechanism: str
    pexec: int


@dataclass(frozen=True)
class Execution:
    status: str
    detail: str
    exit_code: int | None
    stderr_tail: str
    output: ProbeOutput | None
    peak_rss_kb: int | None
    started: float
    wall_s: float
    machine: audit.Audit | None = None  # what the rest of the machine did meanwhile (None: not measurable here)


def plan(cells: list[tuple[str, str]], process_executions: int, randomise: bool = False, seed: int = 0
         ) -> list[Task]:
    """Round-robin: process execution p of every benchmark × mechanism cell before p+1 of any, so slow
    drifts of the machine (thermal, other tenants) spread over all pairs instead of biasing one.
    With randomise, each round is shuffled (seeded, so a resumed campaign follows the same plan)."""
    rng = random.Random(seed)
    tasks: list[Task] = []
    for p in range(process_executions):
        round_ = list(cells)
        if randomise:
            rng.shuffle(round_)
        first = len(tasks)
        tasks.extend(Task(first + i, b, m, p) for i, (b, m) in enumerate(round_))
    return tasks


BENCHMARK_GRACE_S = 3.0  # how long a benchmark asked to stop has to end before it is killed
STOP_GRACE_S = 10.0  # how long the launcher gets to kill and reap what the benchmark started


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def ask_to_stop(pid: int, launched: bool) -> None:
    """SIGTERM to a benchmark the harness stops (a timeout, a failed lock-step block, an interrupt): the
    launcher's child, or the process itself without a launcher. A database's client (GT.M) runs its database
    down on SIGTERM, where SIGKILL leaves its shared memory behind."""
    for target in children(pid) if launched else [pid]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGTERM)


@dataclass(frozen=True)
class Running:
    """A benchmark to stop: the process the harness started (its launcher, when launched), and how to wait
    for it: wait(seconds) waits at most that long for it to end and be reaped, and says whether it has."""

    pid: int
    launched: bool
    wait: Callable[[float], bool]


def popen_wait(proc: subprocess.Popen[bytes]) -> Callable[[float], bool]:
    """Running.wait for a process started with subprocess.Popen."""
    def wait(seconds: float) -> bool:
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    return wait


def stop(running: Sequence[Running], grace_s: float = BENCHMARK_GRACE_S, launcher_grace_s: float = STOP_GRACE_S
         ) -> bool:
    """Stop benchmarks, all at once, the one sequence every part of the harness uses: each asked to stop
    (ask_to_stop); after grace_s, SIGTERM to a launcher still there (it kills and reaps what its benchmark
    started, the subreaper's strays too); after launcher_grace_s, SIGKILL to their process groups, the fallback.
    True when every benchmark ended on being asked."""
    for r in running:
        ask_to_stop(r.pid, r.launched)
    left = _still_running(running, grace_s)
    for r in left:
        if r.launched:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(r.pid, signal.SIGTERM)
    _still_running([r for r in left if r.launched], launcher_grace_s)
    for r in left:
        _kill_group(r.pid)
    return not left


def _still_running(running: Sequence[Running], seconds: float) -> list[Running]:
    deadline = time.monotonic() + seconds
    return [r for r in running if not r.wait(max(0.0, deadline - time.monotonic()))]


_LAUNCHER_SOURCE = Path(__file__).with_name("_launch.c")
_SPAWN_PREFIX = "bridgebench-launch: cannot "  # it could not start the benchmark


def launcher() -> Path | None:
    """The small launcher that makes peak RSS honest and lets nothing escape (see _launch.c); None if it
    cannot be compiled, and then peak RSS is not reported rather than reported wrong, and only the
    benchmark's process group is killed."""
    try:
        return native.compiled(_LAUNCHER_SOURCE, ("-O2",))
    except (OSError, subprocess.SubprocessError):
        return None


class Capture(threading.Thread):
    """Drains one pipe so the child never blocks on it, keeping a bounded part in memory and nothing on
    disk: the head (stdout: the protocol line is the last one, and a stdout over the cap is a violation
    anyway) or the tail (stderr: the last lines say why a process failed)."""

    def __init__(self, fd: int, limit: int, keep_tail: bool) -> None:
        super().__init__(daemon=True)
        self.fd, self.limit, self.keep_tail = fd, limit, keep_tail
        self.data = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.total += len(chunk)
                if self.keep_tail:
                    self.data += chunk
                    if len(self.data) > 2 * self.limit:
                        del self.data[:-self.limit]
                elif len(self.data) <= self.limit:
                    self.data += chunk[:self.limit + 1 - len(self.data)]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def text(self) -> str:
        data = self.data[-self.limit:] if self.keep_tail else self.data[:self.limit]
        return bytes(data).decode("utf-8", errors="replace")

    @property
    def overflowed(self) -> bool:
        return self.total > self.limit


def read_usage(path: str) -> dict[str, float]:
    """What the launcher wrote about the benchmark: peak RSS (KiB), user and system CPU seconds."""
    usage: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(path).read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                usage[key] = float(value)
    return usage


class UsageFile:
    """Where the launcher writes what a process used (read_usage): a temporary file without a name (unlinked as
    it is made), which the launcher inherits (`pass_fds`) and opens as `path`, /dev/fd/N. A harness killed
    outright (SIGKILL: its campaign resumes and loses nothing) can clean nothing up, and leaves no file behind."""

    def __init__(self, prefix: str = "bridgebench-usage-") -> None:
        self._file = tempfile.TemporaryFile(prefix=prefix)  # noqa: SIM115 (closed by close() or the with block)
        self.fd = self._file.fileno()
        self.path = f"/dev/fd/{self.fd}"

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> UsageFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def how_it_ended(exit_code: int, stderr_tail: str) -> str:
    """A process that did not exit 0, in a line: the signal or the status, and its last line on stderr."""
    how = f"killed by signal {-exit_code}" if exit_code < 0 else f"exit status {exit_code}"
    last = stderr_tail.strip().splitlines()[-1:] or ["(no stderr)"]
    return f"{how}: {last[0][:200]}"


def execute(argv: list[str], env: dict[str, str], cwd: Path, iterations: int, timeout_s: float) -> Execution:
    """One process execution. The child runs in its own session, under the launcher, so a timeout or an
    interrupt kills everything it started; a Ctrl-C at the terminal reaches the harness, which stops the
    child and re-raises."""
    launch = launcher()
    started = time.time()
    before = audit.sample()
    t0 = time.monotonic()
    with UsageFile() as usage_file:
        command = [str(launch), usage_file.path, *argv] if launch else argv
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w, env=env,
                                    cwd=cwd, start_new_session=True, pass_fds=(usage_file.fd,) if launch else ())
        except OSError as e:
            for fd in (out_r, err_r):
                os.close(fd)
            return Execution(SPAWN_FAILED, f"cannot start {argv[0]}: {e.strerror}", None, "", None, None,
                             started, 0.0)
        finally:  # the child has its copies; the harness must not hold the write ends or EOF never comes
            os.close(out_w)
            os.close(err_w)
        captures = [Capture(out_r, MAX_STDOUT, keep_tail=False), Capture(err_r, STDERR_TAIL, keep_tail=True)]
        for c in captures:
            c.start()
        reaped: dict[str, tuple[int, int, object]] = {}

        def reap() -> None:
            reaped["w"] = os.wait4(proc.pid, 0)

        def reaped_within(seconds: float) -> bool:
            waiter.join(seconds)
            return not waiter.is_alive()

        def stop_it() -> None:
            stop([Running(proc.pid, launch is not None, reaped_within)])
            waiter.join()

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        try:
            waiter.join(timeout_s)
        except BaseException:
            stop_it()
            proc.returncode = -9
            raise
        timed_out = waiter.is_alive()
        if timed_out:
            stop_it()
        _kill_group(proc.pid)  # without the launcher, this is what reaps grandchildren left in the group
        waiter.join()
        wall_s = time.monotonic() - t0
        after = audit.sample()
        for c in captures:
            c.join(STOP_GRACE_S)  # a descendant that escaped without the launcher may hold a pipe open
        _, status, _ = reaped["w"]
        exit_code = os.waitstatus_to_exitcode(status)
        proc.returncode = exit_code  # reaped by wait4 above; tell Popen so it does not try again
        usage = read_usage(usage_file.path)
    peak_rss_kb = int(usage["maxrss_kb"]) if "maxrss_kb" in usage else None
    cpu_s = usage["user_s"] + usage["sys_s"] if "user_s" in usage and "sys_s" in usage else None
    machine = audit.audit(before, after, wall_s, cpu_s)
    stdout_capture, stderr_capture = captures
    stderr_tail = stderr_capture.text()
    stdout, too_big = stdout_capture.text(), stdout_capture.overflowed

    def failed(kind: str, detail: str) -> Execution:
        return Execution(kind, detail, exit_code, stderr_tail, None, peak_rss_kb, started, wall_s, machine)

    if timed_out:
        return failed(TIMEOUT, f"no result after {timeout_s:g} s; killed")
    if exit_code == 127 and _SPAWN_PREFIX in stderr_tail:
        return failed(SPAWN_FAILED, stderr_tail.strip().splitlines()[-1][len("bridgebench-launch: "):])
    if exit_code != 0:
        return failed(CRASHED, how_it_ended(exit_code, stderr_tail))
    if too_big:
        return failed(PROTOCOL, f"stdout larger than {MAX_STDOUT} bytes")
    try:
        output = parse(stdout, iterations)
    except ProtocolError as e:
        return failed(PROTOCOL, str(e))
    return Execution(OK, "", exit_code, stderr_tail, output, peak_rss_kb, started, wall_s, machine)


def execute_counted(argv: list[str], env: dict[str, str], cwd: Path, iterations: int, timeout_s: float
                    ) -> Execution:
    """One process execution under callgrind (instructions.py): as execute(), with each iteration's instruction
    count added to the output as the `instructions` series. Counts that cannot be read make the execution a
    protocol violation, with the reason."""
    with tempfile.TemporaryDirectory(prefix="bridgebench-callgrind-") as tmp:
        try:
            wrapped, pinned = instructions.command(argv, env, Path(tmp))
        except instructions.CountingError as e:
            return Execution(SPAWN_FAILED, str(e), None, "", None, None, time.time(), 0.0)
        run = execute(wrapped, pinned, cwd, iterations, timeout_s)
        if run.status == CRASHED and instructions.VALGRIND_ABORTED in run.stderr_tail:
            elsewhere = instructions.other_processes(Path(tmp))
            return replace(run, detail=f"valgrind itself aborted ({instructions.valgrind_version()}: an internal error "
                           "of valgrind's, not the program's; its report is in the stderr tail)"
                           + (f"; besides, {elsewhere}" if elsewhere else ""))
        if run.status != OK or run.output is None:
            return run
        try:
            counted = instructions.counts(Path(tmp), iterations)
        except instructions.CountingError as e:
            return replace(run, status=PROTOCOL, detail=str(e), output=None)
    if instructions.INSTRUCTIONS in run.output.counters:
        return replace(run, status=PROTOCOL, output=None,
                       detail=f"the probe reports a counter named {instructions.INSTRUCTIONS!r}, which counted runs "
                              "add")
    # Peak RSS and the probe's start-up time would be valgrind's: not reported rather than reported wrong.
    info = {k: v for k, v in run.output.info.items() if k != "setup_s"}
    counters = {**run.output.counters, instructions.INSTRUCTIONS: counted}
    # What the rest of the machine did is kept, but it disturbs no count (callgrind runs the program on a
    # simulated CPU, one instruction after another, whatever else runs): nothing to flag.
    machine = replace(run.machine, disturbed=None) if run.machine else None
    return replace(run, peak_rss_kb=None, machine=machine,
                   output=replace(run.output, info=info, counters=counters))
