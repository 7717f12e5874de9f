"""Hostile benchmarks, bad input, full disks and a second harness: bridgebench records the failure, says
so in one line with a documented exit code, keeps every stored iteration, and leaves no process behind.

Each hostile behaviour lives in tests/fixtures/probe.py and passes the answer check, then misbehaves in the
timed runs. Processes are found by the PROBE_MARKER each test puts in the environment it hands down."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridgebench.study import StudyError, read_study
from tests.conftest import (
    REPO,
    add_benchmark,
    bridgebench,
    marked_processes,
    rows,
    start_bridgebench,
    stored_iterations,
    survivors,
)

EXIT_USAGE, EXIT_FAILED_EXECUTIONS, EXIT_STORE_WRITE, EXIT_INTERRUPTED = 2, 4, 6, 130


def wait_for_descendants(marker: str, harness: int, count: int, bound_s: float = 60) -> list[int]:
    """The marked processes other than the harness, once there are `count` of them (or the bound passed)."""
    deadline = time.monotonic() + bound_s
    while len(found := [p for p in marked_processes(marker) if p != harness]) < count:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return found


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    assert "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: "), stderr
    for fragment in fragments:
        assert fragment in last, last


def statuses(db: Path) -> dict[str, int]:
    return dict(rows(db, "SELECT status, count(*) FROM execution GROUP BY status"))


# --- hostile output ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("behaviour", "detail"), [
    ("deep", "nested too deep"),
    ("hugeint", "not a number of at most"),
    ("giantint", "not JSON"),
    ("hugebatch", "'batch' must be an integer from 1"),
])
def test_hostile_output_is_a_recorded_failure_not_a_crash(basic_study: Path, tmp_path: Path, behaviour: str,
                                                          detail: str) -> None:
    add_benchmark(basic_study, behaviour)
    result = bridgebench("run", str(basic_study), cwd=tmp_path)
    assert result.returncode == EXIT_FAILED_EXECUTIONS, result.stderr
    assert_one_line_error(result.stderr, "4 process execution(s) failed")
    db = tmp_path / "results" / "bridgebench.sqlite"
    assert statuses(db) == {"ok": 4, "protocol violation": 4}
    details = {r[0] for r in rows(db, f"SELECT detail FROM execution WHERE benchmark='{behaviour}'")}
    assert all(detail in d for d in details), details
    assert rows(db, "SELECT state FROM campaign") == [("done",)]
    assert stored_iterations(db) == 4 * 4  # the good executions, whole


def test_a_flood_on_stderr_is_capped_in_memory(basic_study: Path, tmp_path: Path) -> None:
    """512 MiB on stderr: the harness keeps the tail, not the flood. Peak RSS of the harness (and, below it,
    the probe, which writes 1 MiB at a time) is read from the kernel by a small wrapper."""
    add_benchmark(basic_study, "stderrflood")
    wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m", "bridgebench.cli", "run",
                           str(basic_study), "-p", "1", "--benchmarks", "stderrflood"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(REPO), "PROBE_FLOOD_MB": "512"})
    peak_mib = int(done.stdout.strip().splitlines()[-1]) / 1024
    assert peak_mib < 400, f"harness peak RSS {peak_mib:.0f} MiB while the probe wrote 512 MiB to stderr"
    tails = rows(tmp_path / "results" / "bridgebench.sqlite", "SELECT length(stderr_tail) FROM execution")
    assert tails and all(0 < n <= 2000 for (n,) in tails)


def test_a_wrong_answer_only_in_timed_runs_fails_the_run(basic_study: Path, tmp_path: Path) -> None:
    add_benchmark(basic_study, "wrongtimed")
    result = bridgebench("run", str(basic_study), "--benchmarks", "wrongtimed", "-p", "3", cwd=tmp_path,
                         env={"PROBE_ONCE_FILE": str(tmp_path / "once")})
    assert result.returncode == EXIT_FAILED_EXECUTIONS, result.stderr
    assert_one_line_error(result.stderr, "1 process execution(s) failed", "1 of them with a wrong answer")


# --- processes that try to outlive their execution -------------------------------------------------------
def test_children_that_leave_the_group_are_killed_at_the_timeout(basic_study: Path, tmp_path: Path,
                                                                marker: str) -> None:
    add_benchmark(basic_study, "escape")
    result = bridgebench("run", str(basic_study), "--benchmarks", "escape", "-p", "1", "--timeout", "3",
                         cwd=tmp_path, env={"PROBE_MARKER": marker})
    assert result.returncode == EXIT_FAILED_EXECUTIONS, result.stderr
    assert statuses(tmp_path / "results" / "bridgebench.sqlite") == {"timeout": 2}
    assert survivors(marker) == []


def test_children_left_behind_by_a_finished_benchmark_are_killed(basic_study: Path, tmp_path: Path,
                                                                 marker: str) -> None:
    add_benchmark(basic_study, "escape-ok")
    result = bridgebench("run", str(basic_study), "--benchmarks", "escape-ok", "-p", "1", cwd=tmp_path,
                         env={"PROBE_MARKER": marker})
    assert result.returncode == 0, result.stderr
    assert survivors(marker) == []


def test_a_killed_harness_takes_its_benchmark_and_the_benchmarks_children_with_it(
        basic_study: Path, tmp_path: Path, marker: str) -> None:
    add_benchmark(basic_study, "escape")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    proc = start_bridgebench("run", str(basic_study), "--benchmarks", "escape", "-p", "1", "--timeout", "600",
                             cwd=tmp_path, env={"PROBE_MARKER": marker, "TMPDIR": str(temporary)})
    below = wait_for_descendants(marker, proc.pid, 4)  # launcher, probe, its 2 children
    assert len(below) >= 4, proc.stderr
    proc.kill()  # the harness only: SIGKILL, no chance to clean up
    proc.communicate(timeout=60)
    assert survivors(marker) == []
    # nor files: the launcher's usage file has no name to leave behind (it did, one per killed run, in /tmp)
    assert [p.name for p in temporary.iterdir() if p.name.startswith("bridgebench-")] == []


def test_what_a_benchmark_that_dies_hard_leaves_in_its_tmpdir_is_removed(basic_study: Path, tmp_path: Path) -> None:
    """A Go plugin's RPC server killed mid-run leaves its unix socket in TMPDIR: each execution gets a private
    folder there, removed with all it holds once the execution has ended."""
    add_benchmark(basic_study, "litter")
    temporary, saw = tmp_path / "tmp", tmp_path / "saw"
    temporary.mkdir()
    result = bridgebench("run", str(basic_study), "--benchmarks", "litter", "-p", "2", cwd=tmp_path,
                         env={"TMPDIR": str(temporary), "PROBE_SAW": str(saw)})
    assert result.returncode == EXIT_FAILED_EXECUTIONS, result.stderr
    assert statuses(tmp_path / "results" / "bridgebench.sqlite") == {"crashed": 4}
    folders = saw.read_text().split()
    assert len(folders) == len(set(folders)) == 4  # one of its own for every execution
    assert all(Path(f).parent == temporary and Path(f).name.startswith("bridgebench-run-") for f in folders)
    assert list(temporary.iterdir()) == []


def test_a_launcher_removes_the_folders_of_launchers_killed_outright(tmp_path: Path) -> None:
    """A launcher killed outright (SIGKILL) cannot remove its private folder; the next one removes every folder
    that no launcher holds (each holds a lock on its own while it lives) and that is older than a minute (a
    folder between its making and its lock). Ages are set, not waited for: nothing here depends on speed."""
    import fcntl

    from bridgebench.runner import launcher

    launch = launcher()
    assert launch is not None
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = os.environ | {"TMPDIR": str(temporary)}
    # a launcher that runs on (its benchmark waits for input), its folder made old below: its own lock keeps it
    running = subprocess.Popen([str(launch), "/dev/null", sys.executable, "-c",
                                "import os, sys; print(os.environ['TMPDIR'], flush=True); sys.stdin.read()"],
                               env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert running.stdout is not None and running.stdin is not None
    alive = Path(running.stdout.readline().strip())
    old = time.time() - 3600
    os.utime(alive, (old, old))
    folders = {name: temporary / name for name in
               ("bridgebench-run-deadAA", "bridgebench-run-liveAA", "bridgebench-run-freshA", "bridgebench-tmp-beforA")}
    for name, folder in folders.items():
        folder.mkdir()
        (folder / "plugin.sock").write_text("left behind")
        if "fresh" not in name:
            os.utime(folder, (old, old))
    held = os.open(folders["bridgebench-run-liveAA"], os.O_RDONLY)  # as a live launcher holds its own
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = subprocess.run([str(launch), "/dev/null", sys.executable, "-c",
                               "import os; print(os.environ['TMPDIR'])"], env=env, capture_output=True, text=True,
                              timeout=60)
        assert alive.is_dir()  # the running launcher's, old as it is
    finally:
        os.close(held)
        running.stdin.close()
        running.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    own = Path(done.stdout.strip())
    assert own.parent == temporary and own.name.startswith("bridgebench-run-") and not own.exists()
    assert alive.name.startswith("bridgebench-run-") and not alive.exists()  # gone with its own launcher
    assert sorted(p.name for p in temporary.iterdir()) == ["bridgebench-run-freshA", "bridgebench-run-liveAA",
                                                          "bridgebench-tmp-beforA"]


# --- signals ---------------------------------------------------------------------------------------------
def test_sigint_during_the_answer_check_says_nothing_was_stored(basic_study: Path, tmp_path: Path,
                                                                marker: str) -> None:
    add_benchmark(basic_study, "checkhang")
    proc = start_bridgebench("run", str(basic_study), "--benchmarks", "checkhang", cwd=tmp_path,
                             env={"PROBE_MARKER": marker})
    assert wait_for_descendants(marker, proc.pid, 2)  # the launcher and the probe: the check is under way
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, stderr
    assert "nothing was timed or stored" in stderr
    assert "--resume" not in stderr
    assert survivors(marker) == []


def test_a_run_started_with_sigint_ignored_still_stops_on_sigint(basic_study: Path, tmp_path: Path,
                                                                  marker: str) -> None:
    """POSIX shells start `cmd &` with SIGINT ignored; `kill -INT` must stop the run all the same."""
    add_benchmark(basic_study, "gate")
    proc = start_bridgebench("run", str(basic_study), "--benchmarks", "gate", cwd=tmp_path,
                             env={"PROBE_MARKER": marker, "PROBE_GATE": str(tmp_path / "gate")},
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    wait_for_campaign(tmp_path / "results" / "bridgebench.sqlite")  # past the answer check
    assert wait_for_descendants(marker, proc.pid, 2)  # the first timed execution, held at the gate
    os.kill(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, stderr
    assert rows(tmp_path / "results" / "bridgebench.sqlite", "SELECT state FROM campaign") == [("interrupted",)]
    assert survivors(marker) == []


# --- two harnesses, one campaign ---------------------------------------------------------------------------
def test_a_second_harness_on_a_running_campaign_is_refused(basic_study: Path, tmp_path: Path,
                                                           marker: str) -> None:
    """The first harness is held inside its first timed execution (the probe waits for a gate file), so the
    second one meets a campaign that is certainly running, however fast or slow the machine is."""
    add_benchmark(basic_study, "gate")
    db = tmp_path / "results" / "bridgebench.sqlite"
    env = {"PROBE_MARKER": marker, "PROBE_GATE": str(tmp_path / "gate")}
    first = start_bridgebench("run", str(basic_study), "--benchmarks", "gate", cwd=tmp_path, env=env)
    try:
        wait_for_campaign(db)  # past the answer check
        assert wait_for_descendants(marker, first.pid, 2)  # the first timed execution, held at the gate
        for _ in range(2):  # a second harness, and a third: each refused, neither disturbs the first
            second = bridgebench("run", str(basic_study), "--resume", cwd=tmp_path, env=env)
            assert second.returncode == EXIT_USAGE, second.stderr
            assert_one_line_error(second.stderr, "campaign 1 is being run by another bridgebench",
                                  f"pid {first.pid}")
    finally:
        first.kill()  # SIGKILL: its lock must die with it
        first.communicate(timeout=60)
    assert survivors(marker) == []
    assert rows(db, "SELECT count(*) FROM execution")[0][0] == 0
    (tmp_path / "gate").touch()
    resumed = bridgebench("run", str(basic_study), "--resume", cwd=tmp_path, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(r[0] for r in rows(db, "SELECT seq FROM execution")) == list(range(4))


def wait_for_campaign(db: Path, bound_s: float = 60) -> None:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.Error):
            if db.exists() and rows(db, "SELECT count(*) FROM planned")[0][0]:
                return
        time.sleep(0.05)
    raise AssertionError("no campaign was planned")


# --- bad input: one line, a documented exit code ----------------------------------------------------------
@pytest.mark.parametrize(("args", "fragment"), [
    (["--timeout", "inf"], "timeout inf s: expected above 0 and at most 86400 s"),
    (["--timeout", "1e300"], "expected above 0 and at most 86400 s"),
    (["-p", "100000000"], "at most 1000000 are planned in one campaign"),
    (["--resume", "--campaign", "999"], "no campaign 999"),
])
def test_bad_run_options_are_one_line_errors(basic_study: Path, tmp_path: Path, args: list[str],
                                             fragment: str) -> None:
    result = bridgebench("run", str(basic_study), *args, cwd=tmp_path, timeout=60)
    assert result.returncode == EXIT_USAGE, result.stderr
    assert_one_line_error(result.stderr, fragment)


@pytest.mark.parametrize("value", ["inf", "1e300"])
def test_an_endless_timeout_in_a_study_file_is_refused(basic_study: Path, tmp_path: Path, value: str) -> None:
    basic_study.write_text(basic_study.read_text().replace("timeout_s = 20", f"timeout_s = {value}"))
    result = bridgebench("run", str(basic_study), cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    assert_one_line_error(result.stderr, "budget.timeout_s: expected a number of seconds above 0 and at most 86400")


def test_a_study_file_that_is_not_utf8_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "study.toml"
    bad.write_bytes(b'[study]\nname = "caf\xe9"\n')
    with pytest.raises(StudyError, match=r"study.toml:2: not UTF-8 text \(byte 0xe9\)"):
        read_study(bad)
    result = bridgebench("run", str(bad), cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    assert_one_line_error(result.stderr, "not UTF-8")


def test_an_unwritable_report_folder_is_refused_before_the_campaign(basic_study: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = bridgebench("run", str(basic_study), "--report-dir", str(tmp_path / "a-file" / "reports"),
                         cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    assert_one_line_error(result.stderr, "--report-dir", "cannot write reports there")
    assert not (tmp_path / "results").exists()  # nothing was run, nothing was stored


def test_read_only_commands_never_create_a_store(basic_study: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "bridgebench.sqlite"
    for command in (["report"], ["analyse"], ["diff", "1", "2"]):
        result = bridgebench(*command, "--store", str(missing), cwd=tmp_path)
        assert result.returncode == EXIT_USAGE, command
        assert_one_line_error(result.stderr, "no store there")
    assert not missing.parent.exists()
    assert bridgebench("run", str(basic_study), cwd=tmp_path).returncode == 0
    result = bridgebench("report", "-o", str(tmp_path / "missing" / "r.md"), "--format", "markdown",
                         cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    assert_one_line_error(result.stderr, "no folder")


def test_a_store_locked_by_another_writer_is_a_one_line_error(basic_study: Path, tmp_path: Path) -> None:
    db = tmp_path / "results" / "bridgebench.sqlite"
    assert bridgebench("run", str(basic_study), cwd=tmp_path).returncode == 0
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the store
    try:
        result = bridgebench("run", str(basic_study), cwd=tmp_path, env={"BRIDGEBENCH_STORE_BUSY_S": "1"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == EXIT_STORE_WRITE, result.stderr
    assert_one_line_error(result.stderr, "cannot write: database is locked")
    assert rows(db, "SELECT count(*) FROM campaign")[0][0] == 1


# --- full and read-only disks ---------------------------------------------------------------------------------
@contextlib.contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_store_on_a_read_only_mount_is_a_one_line_error(basic_study: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "ro,size=1m") as ro:
        result = bridgebench("run", str(basic_study), "--store", str(ro / "bridgebench.sqlite"), cwd=tmp_path)
    assert result.returncode == EXIT_USAGE, result.stderr
    assert_one_line_error(result.stderr, "bridgebench.sqlite")


def test_a_full_disk_stops_the_run_cleanly_and_resume_finishes_it(basic_study: Path, tmp_path: Path) -> None:
    add_benchmark(basic_study, "tiny", param=1, check_param=1)
    with tmpfs(tmp_path / "small", "size=1m") as small:
        db = small / "bridgebench.sqlite"
        args = ("run", str(basic_study), "--benchmarks", "tiny", "-p", "6", "-i", "4000", "--store", str(db),
                "--report-dir", str(tmp_path / "reports"))
        result = bridgebench(*args, cwd=tmp_path)
        assert result.returncode == EXIT_STORE_WRITE, result.stderr
        assert_one_line_error(result.stderr, "cannot write", "full")
        assert rows(db, "PRAGMA integrity_check") == [("ok",)]
        stored = rows(db, "SELECT count(*) FROM execution")[0][0]
        assert 0 < stored < 12
        assert stored_iterations(db) == stored * 4000  # whole executions only
        subprocess.run(["mount", "-o", "remount,size=64m", str(small)], check=True)
        resumed = bridgebench("run", str(basic_study), "--resume", "--store", str(db), "--report-dir",
                              str(tmp_path / "reports"), cwd=tmp_path, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        assert sorted(r[0] for r in rows(db, "SELECT seq FROM execution")) == list(range(12))
        assert stored_iterations(db) == 12 * 4000
