from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from bridgebench.protocol import ProtocolError, parse
from bridgebench.runner import CRASHED, OK, PROTOCOL, SPAWN_FAILED, TIMEOUT, execute, plan

PROBE = str(Path(__file__).parent / "fixtures" / "probe.py")


def run(behaviour: str, iterations: int = 3, timeout: float = 20) -> object:
    return execute([sys.executable, PROBE, behaviour, str(iterations), "1000"], dict(os.environ), Path.cwd(),
                   iterations, timeout)


def test_plan_is_round_robin_and_seeded_shuffle_is_repeatable() -> None:
    tasks = plan([(b, m) for b in ("x", "y") for m in ("a", "b")], 2)
    assert [(t.benchmark, t.mechanism, t.pexec) for t in tasks[:4]] == [
        ("x", "a", 0), ("x", "b", 0), ("y", "a", 0), ("y", "b", 0)]
    assert [t.seq for t in tasks] == list(range(8))
    cells = [(b, m) for b in ("x", "y", "z") for m in ("a", "b", "c")]
    shuffled = plan(cells, 3, randomise=True, seed=7)
    assert shuffled == plan(cells, 3, randomise=True, seed=7)
    assert shuffled != plan(cells, 3)
    # Every round still holds each pair once.
    for p in range(3):
        assert len({(t.benchmark, t.mechanism) for t in shuffled if t.pexec == p}) == 9


def test_ok_execution_parses_times_counters_and_rss() -> None:
    result = run("ok")
    assert result.status == OK
    assert len(result.output.times) == 3
    assert result.output.counters["seen"] == [1.0, 1.0, 1.0]
    assert result.peak_rss_kb and result.peak_rss_kb > 1000


def test_peak_rss_is_the_benchmarks_own_not_the_harnesses() -> None:
    ballast = bytearray(200 * 1024 * 1024)  # make the harness side big: it must not show up below
    ballast[::4096] = b"x" * len(ballast[::4096])
    small, big = run("ok"), run("big")
    assert small.peak_rss_kb is not None and big.peak_rss_kb is not None
    assert small.peak_rss_kb < 100 * 1024
    assert 300 * 1024 <= big.peak_rss_kb < 400 * 1024
    del ballast


def test_crash_is_recorded_with_signal_and_stderr() -> None:
    result = run("crash")
    assert result.status == CRASHED
    assert "signal 6" in result.detail
    assert "deliberate crash" in result.stderr_tail


def test_hang_is_killed_at_the_timeout() -> None:
    result = run("hang", timeout=1.0)
    assert result.status == TIMEOUT
    assert 1.0 <= result.wall_s < 120  # killed at the timeout, not after the probe's hour (a bound, not a speed claim)


def test_a_hang_is_asked_to_stop_with_sigterm_before_it_is_killed(tmp_path: Path) -> None:
    """At the timeout the harness sends the benchmark SIGTERM first (runner.stop), and has the launcher kill it
    only after a grace: a benchmark holding a resource that outlives it (a GT.M client's shared memory) can
    release it. The probe writes the file when SIGTERM reaches it."""
    termed = tmp_path / "termed"
    # Started with SIGTERM blocked (a signal mask passes through fork and exec), the probe unblocks it once its
    # handler is set: a SIGTERM sent while it is still starting waits, however slowly it starts on a busy day.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        result = execute([sys.executable, PROBE, "hang", "3", "1000"], dict(os.environ) | {"TERMED": str(termed)},
                         Path.cwd(), 3, 1.0)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    assert result.status == TIMEOUT
    assert termed.read_text() == "SIGTERM"


def test_a_hang_that_ignores_sigterm_is_still_killed() -> None:
    result = run("stubborn", timeout=1.0)
    assert result.status == TIMEOUT
    assert result.wall_s < 120  # SIGKILL after the grace, not after the probe's hour (a bound, not a speed claim)


def test_garbage_is_a_protocol_violation() -> None:
    result = run("garbage")
    assert result.status == PROTOCOL
    assert "not JSON" in result.detail


def test_missing_program_is_recorded() -> None:
    result = execute(["/nonexistent/vm"], dict(os.environ), Path.cwd(), 1, 5)
    assert result.status == SPAWN_FAILED


def test_a_tmpdir_without_room_for_the_private_folder_is_a_failed_start(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    result = execute(["true"], {**os.environ, "TMPDIR": str(missing)}, Path.cwd(), 1, 30)
    assert result.status == SPAWN_FAILED
    assert result.detail.startswith(f"cannot make a private temporary folder in {missing}")


def test_protocol_rejects_wrong_counts_and_bad_values() -> None:
    good = '{"protocol": "bridgebench/1", "times": [0.1, 0.2], "answer": "x"}'
    assert parse("noise before\n" + good, 2).times == [0.1, 0.2]
    for bad, message in [
        (good, "3 values"),
        (good.replace("0.2", "-1"), "non-negative"),
        (good.replace('"x"', "5"), "'answer' must be a string"),
        (good.replace("bridgebench/1", "other"), "expected protocol"),
        ("", "printed nothing"),
    ]:
        try:
            parse(bad, 3 if message == "3 values" else 2)
        except ProtocolError as e:
            assert message in str(e)
        else:
            raise AssertionError(f"accepted {bad!r}")


def test_the_benchmark_starts_with_stdin_stdout_and_stderr_alone(tmp_path: Path) -> None:
    # the launcher's usage file (passed to it as /dev/fd/N) must not reach the benchmark
    probe = tmp_path / "fds.py"
    probe.write_text("import json, os\n"
                     "def is_open(fd):\n"
                     "    try:\n        os.fstat(fd)\n        return True\n"
                     "    except OSError:\n        return False\n"
                     "held = [fd for fd in range(3, 256) if is_open(fd)]\n"
                     "out = {'protocol': 'bridgebench/1', 'times': [0.001], 'answer': repr(held), 'batch': 1}\n"
                     "print(json.dumps(out))\n")
    result = execute([sys.executable, str(probe)], dict(os.environ), tmp_path, 1, 20)
    assert result.status == OK, result.detail
    assert result.output.answer == "[]"
    assert result.peak_rss_kb  # and the launcher still wrote what it used
