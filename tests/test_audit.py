"""The disturbance audit: its arithmetic on recorded /proc/stat samples, its rules, a real competing
process flagged, --wait-quiet, and --exclude-disturbed through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from bridgebench import audit, native
from bridgebench.runner import OK, execute
from bridgebench.store import StoredExecution
from bridgebench.timing.analysis import _audit_summary
from tests.conftest import FIXTURES, REPO, add_benchmark, bridgebench, competitor, rows, start_spinning

# Two /proc/stat readings 2 s apart on a 2-CPU machine (USER_HZ 100): 400 ticks in all passed.
STAT_BEFORE = """cpu  50340 73 9528 188462 903 0 121 21 0 0
cpu0 23815 26 4342 96420 77 0 29 7 0 0
cpu1 26524 47 5186 92042 826 0 91 13 0 0
intr 1261156 0 0
"""
# user +250, system +30, idle +100, steal +20: 280 busy ticks (2.8 CPU-seconds), 0.2 s stolen.
STAT_AFTER = """cpu  50590 73 9558 188562 903 0 121 41 0 0
cpu0 23965 26 4357 96470 77 0 29 17 0 0
cpu1 26624 47 5201 92092 826 0 91 24 0 0
"""


def test_stat_ticks_read_the_aggregate_line() -> None:
    assert audit._stat_ticks(STAT_BEFORE) == (50340 + 73 + 9528 + 0 + 121, 21)
    with pytest.raises(ValueError):
        audit._stat_ticks("intr 1 2 3\n")


def test_others_are_what_was_busy_less_the_benchmark_and_the_harness() -> None:
    b_busy, b_steal = audit._stat_ticks(STAT_BEFORE)
    a_busy, a_steal = audit._stat_ticks(STAT_AFTER)
    before = audit.Sample(b_busy, b_steal, harness_cpu_s=1.00, at=0.0)
    after = audit.Sample(a_busy, a_steal, harness_cpu_s=1.05, at=2.0)
    tick = audit.TICK_S
    # 280 busy ticks; the benchmark used 1.9 s of CPU, the harness 0.05 s: others 280·tick - 1.95 s.
    assert audit.others_cpu_s(before, after, 1.9) == pytest.approx(280 * tick - 1.95)
    assert audit.others_cpu_s(before, after, 10.0) == 0.0  # never negative (tick rounding)
    result = audit.audit(before, after, wall_s=2.0, cpu_s=1.9)
    assert result is not None
    assert result.steal_s == pytest.approx(20 * tick)
    if tick == 0.01:  # USER_HZ 100, as on every Linux this runs on
        assert result.others_cpu_s == pytest.approx(0.85)
        assert result.disturbed is not None and result.disturbed.startswith("others used 0.4")
    assert audit.audit(None, after, 2.0, 1.9) is None  # /proc/stat unreadable: not audited, not guessed


@pytest.mark.parametrize(("others", "steal", "cpu", "expected"), [
    (0.0, 0.0, 2.0, None),  # quiet, CPU-bound
    (0.6, 0.0, 1.95, "others used 0.30 cores"),
    (0.0, 0.3, 0.8, "steal took 0.15 cores; wall exceeded CPU by 60%"),
    (0.0, 0.0, 0.2, None),  # waits by design (an RPC plugin) on an idle machine: not disturbed
    (0.1, 0.0, 0.5, "wall exceeded CPU by 75%"),  # waited while others were busy
    (0.02, 0.0, 1.0, None),  # below the tick noise floor
])
def test_judge_rules(others: float, steal: float, cpu: float, expected: str | None) -> None:
    wall = 2.0
    assert audit.judge(audit.Audit(wall, cpu, others, steal, 0.5)) == expected


def test_an_execution_beside_a_cpu_bound_process_is_flagged() -> None:
    with competitor():
        run = execute([sys.executable, str(FIXTURES / "probe.py"), "ok", "8", "2000000"], dict(os.environ),
                      Path.cwd(), 8, 300)
    assert run.status == OK, run.detail
    assert run.machine is not None and run.machine.cpu_s is not None
    assert run.machine.others_cpu_s > 0.25 * run.machine.wall_s or run.machine.steal_s > 0.1 * run.machine.wall_s
    assert run.machine.disturbed, run.machine


def test_wait_quiet_waits_out_a_busy_machine_and_stops_at_its_bound() -> None:
    with competitor():
        waited = audit.wait_quiet(1.0, window_s=0.25)
    assert waited >= 1.0  # never quiet while the competitor ran: the whole bound, then on


def test_wait_quiet_returns_after_one_quiet_window(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = iter([audit.Sample(100, 5, 1.0, 0.0), audit.Sample(101, 5, 1.0, 0.5)])  # 1 tick in 0.5 s
    monkeypatch.setattr(audit, "sample", lambda: next(samples))
    monkeypatch.setattr(audit.time, "sleep", lambda s: None)
    assert audit.wait_quiet(1000.0) < 1000.0


def test_cli_reports_disturbed_executions_and_can_leave_them_out(basic_study: Path, tmp_path: Path) -> None:
    result = bridgebench("run", str(basic_study), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    audited = rows(db, "SELECT cpu_s, others_cpu_s, steal_s, load1 FROM execution")
    assert audited and all(None not in r for r in audited)
    with sqlite3.connect(db) as conn:  # as if the audit had flagged execution 0 (a, first process execution)
        conn.execute("UPDATE execution SET disturbed=NULL")  # and nothing else, however busy the machine was
        conn.execute("UPDATE execution SET disturbed='others used 0.90 cores' WHERE seq=0")
    kept = json.loads(bridgebench("analyse", "--json", cwd=tmp_path).stdout)
    left_out = json.loads(bridgebench("analyse", "--json", "--exclude-disturbed", cwd=tmp_path).stdout)
    assert kept["audit"]["disturbed"] == left_out["audit"]["disturbed"] == 1
    cell = {c["mechanism"]: c for c in kept["cells"]}["a"]
    assert cell["disturbed"] == 1 and cell["executions_ok"] == 2 and cell["excluded_disturbed"] == 0
    cell = {c["mechanism"]: c for c in left_out["cells"]}["a"]
    assert cell["excluded_disturbed"] == 1 and cell["executions_ok"] == 1
    md = bridgebench("report", "--format", "markdown", "--exclude-disturbed", cwd=tmp_path).stdout
    assert "WARNING: 1 of 4 process executions ran on a disturbed machine" in md
    assert "left out of the analysis (--exclude-disturbed)" in md
    assert "| Disturbed |" in md and "1/2 left out" in md
    terminal = bridgebench("report", cwd=tmp_path).stdout
    assert "`bridgebench analyse --exclude-disturbed` leaves them out" in " ".join(terminal.split())


def test_wait_quiet_is_recorded_with_each_execution(basic_study: Path, tmp_path: Path) -> None:
    add_benchmark(basic_study, "tiny", param=1, check_param=1)
    result = bridgebench("run", str(basic_study), "--benchmarks", "tiny", "-p", "1", "--wait-quiet", "0.5",
                         cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    waits = rows(tmp_path / "results" / "bridgebench.sqlite", "SELECT waited_s FROM execution")
    assert len(waits) == 2 and all(w is not None and w > 0 for (w,) in waits)  # at least one window each
    config = rows(tmp_path / "results" / "bridgebench.sqlite", "SELECT config_json FROM campaign")[0][0]
    assert json.loads(config)["options"]["wait_quiet_s"] == 0.5


def test_a_single_iterations_stolen_time_is_visible_in_the_cpu_counter(tmp_path: Path) -> None:
    """The planted C benchmark reads the process CPU clock around each iteration. Pinned to one CPU with a
    CPU-bound competitor on the same CPU, its iterations' wall time far exceeds their CPU time."""
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) is not installed")
    exe = native.compiled(REPO / "probes" / "c" / "planted.c", ("-O2",))
    quiet = execute([str(exe), "5", "2000000"], dict(os.environ), tmp_path, 5, 300)
    assert quiet.status == OK and quiet.output is not None
    assert len(quiet.output.counters["cpu_s"]) == 5
    spin = start_spinning("taskset", "-c", "0")
    try:
        # ~20 ms an iteration: several of the scheduler's slices, so that nearly every iteration shares its CPU
        # (at ~5 ms, half of them fit between two of the competitor's slices and lose nothing)
        busy = execute(["taskset", "-c", "0", str(exe), "20", "16000000"], dict(os.environ), tmp_path, 20, 300)
    finally:
        spin.kill()
        spin.wait(timeout=60)
    assert busy.status == OK and busy.output is not None
    lost = [w - c > 0.1 * w for w, c in zip(busy.output.times, busy.output.counters["cpu_s"], strict=True)]
    assert sum(lost) >= 10, list(zip(busy.output.times, busy.output.counters["cpu_s"], strict=True))


def test_the_summary_reads_a_lock_step_members_others_over_its_blocks_wall_as_the_verdict_did() -> None:
    # A block of five audited once: 2.68 s of others over its 3.7 s, 0.72 cores (the members' verdict). Each member
    # stores that audit and its own share of the wall; read over the share, the report once said 8.49 cores.
    def member(wall_s: float) -> StoredExecution:
        info = json.dumps({"pairing": {"block": "b1", "members": 5, "block_wall_s": 3.7}})
        return StoredExecution(1, 1, "fasta", "m", 0, OK, "", 0, "", None, None, None, wall_s, info,
                               others_cpu_s=2.68, steal_s=0.0, disturbed="others used 0.72 cores")
    alone = StoredExecution(2, 2, "fasta", "n", 1, OK, "", 0, "", None, None, None, 1.0, "{}", others_cpu_s=0.1,
                            steal_s=0.05)
    summary = _audit_summary([member(0.32), member(1.2), alone], exclude_disturbed=False)
    assert summary.others_cores_max == pytest.approx(2.68 / 3.7)
    assert summary.others_cores_median == pytest.approx(2.68 / 3.7)
    assert summary.steal_cores_max == pytest.approx(0.05)
    assert (summary.audited, summary.disturbed) == (3, 2)
