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
from dataclasses import dataclass
from pathlib import Path

from bridgebench import native
from bridgebench.protocol import ProbeOutput, ProtocolError, parse

STDERR_TAIL = 2000
MAX_STDOUT = 64 * 1024 * 1024

# Statuses of a process execution.
OK = "ok"
CRASHED = "crashed"
TIMEOUT = "timeout"
PROTOCOL = "protocol violation"
SPAWN_FAILED = "spawn failed"


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


def plan(benchmarks: list[str], mechanisms: list[str], process_executions: int,
         randomise: bool = False, seed: int = 0) -> list[Task]:
    """Round-robin: process execution p of every benchmark × mechanism before p+1 of any, so slow
    drifts of the machine (thermal, other tenants) spread over all pairs instead of biasing one.
    With randomise, each round is shuffled (seeded, so a resumed campaign follows the same plan)."""
    rng = random.Random(seed)
    tasks: list[Task] = []
    for p in range(process_executions):
        round_ = [(b, m) for b in benchmarks for m in mechanisms]
        if randomise:
            rng.shuffle(round_)
        first = len(tasks)
        tasks.extend(Task(first + i, b, m, p) for i, (b, m) in enumerate(round_))
    return tasks


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


_LAUNCHER_SOURCE = Path(__file__).with_name("_launch.c")
_SPAWN_PREFIX = "bridgebench-launch: cannot execute"


def launcher() -> Path | None:
    """The small launcher that makes peak RSS honest (see _launch.c); None if it cannot be compiled, and
    then peak RSS is not reported rather than reported wrong."""
    try:
        return native.compiled(_LAUNCHER_SOURCE, ("-O2",))
    except (OSError, subprocess.SubprocessError):
        return None


def _read_capped(f: tempfile._TemporaryFileWrapper) -> tuple[str, bool]:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - MAX_STDOUT))
    return f.read().decode("utf-8", errors="replace"), size > MAX_STDOUT


def execute(argv: list[str], env: dict[str, str], cwd: Path, iterations: int, timeout_s: float) -> Execution:
    """One process execution. The child runs in its own session so a timeout kills everything it
    started, and a Ctrl-C at the terminal reaches the harness, which kills the child and re-raises."""
    launch = launcher()
    started = time.time()
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(prefix="bridgebench-rss-") as rss_file:
        command = [str(launch), rss_file.name, *argv] if launch else argv
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                                    start_new_session=True)
        except OSError as e:
            return Execution(SPAWN_FAILED, f"cannot start {argv[0]}: {e.strerror}", None, "", None, None,
                             started, 0.0)
        reaped: dict[str, tuple[int, int, object]] = {}

        def reap() -> None:
            reaped["w"] = os.wait4(proc.pid, 0)

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        try:
            waiter.join(timeout_s)
        except BaseException:
            _kill_group(proc.pid)
            waiter.join()
            proc.returncode = -9
            raise
        timed_out = waiter.is_alive()
        _kill_group(proc.pid)  # also reaps grandchildren a benchmark may have left behind
        waiter.join()
        wall_s = time.monotonic() - t0
        _, status, _ = reaped["w"]
        exit_code = os.waitstatus_to_exitcode(status)
        proc.returncode = exit_code  # reaped by wait4 above; tell Popen so it does not try again
        rss_text = Path(rss_file.name).read_text().strip()
        peak_rss_kb = int(rss_text) if rss_text.isdigit() else None
        err.seek(0)
        stderr_tail = err.read()[-STDERR_TAIL:].decode("utf-8", errors="replace")
        stdout, too_big = _read_capped(out)

    def failed(kind: str, detail: str) -> Execution:
        return Execution(kind, detail, exit_code, stderr_tail, None, peak_rss_kb, started, wall_s)

    if timed_out:
        return failed(TIMEOUT, f"no result after {timeout_s:g} s; killed")
    if exit_code == 127 and _SPAWN_PREFIX in stderr_tail:
        return failed(SPAWN_FAILED, stderr_tail.strip().splitlines()[-1][len("bridgebench-launch: "):])
    if exit_code != 0:
        how = f"killed by signal {-exit_code}" if exit_code < 0 else f"exit status {exit_code}"
        last = stderr_tail.strip().splitlines()[-1:] or ["(no stderr)"]
        return failed(CRASHED, f"{how}: {last[0][:200]}")
    if too_big:
        return failed(PROTOCOL, f"stdout larger than {MAX_STDOUT} bytes")
    try:
        output = parse(stdout, iterations)
    except ProtocolError as e:
        return failed(PROTOCOL, str(e))
    return Execution(OK, "", exit_code, stderr_tail, output, peak_rss_kb, started, wall_s)
