"""The machine's speed reference (reference.py) and what reports make of it (report/speed.py): a reading is
the real loop's, a failure is a reading with its reason, and readings apart are a warning, in a report and
in a diff. No assertion depends on how fast the machine is."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest

from bridgebench import environment, reference
from bridgebench.affinity import spawning_on
from bridgebench.calibrate import judge_lengths
from bridgebench.cli_views import speed_now
from bridgebench.reference import Reading
from bridgebench.report import speed
from bridgebench.result import CampaignFacts
from bridgebench.store import Store
from bridgebench.timing.analysis import current_analysis
from tests.conftest import bridgebench, make_campaign, rows

FACTS = CampaignFacts(1, "s", "done", 0.0, 1.0, "sha", "m", {}, {}, 2, 2)


def test_a_reading_runs_the_real_constant_loop_and_says_its_cpu() -> None:
    cpu = max(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    got = reference.read("start", cpu, iterations=reference.SKIPPED + 5)
    assert got.iteration_s is not None and got.iteration_s > 0 and got.detail == ""
    assert got.spread is not None and got.spread >= 0
    assert (got.moment, got.cpu) == ("start", cpu)
    assert os.sched_getaffinity(0) == before  # the harness's own affinity is put back


# echo prints its arguments, not the protocol's JSON
@pytest.mark.parametrize(("program", "reason"), [("/bin/false", "false exited with 1"), ("/bin/echo", "echo: "),
                                                 ("/nonexistent/loop", "cannot run loop")])
def test_a_loop_that_fails_is_a_reading_with_its_reason(monkeypatch: pytest.MonkeyPatch, program: str,
                                                        reason: str) -> None:
    monkeypatch.setattr(reference, "binary", lambda: Path(program))
    got = reference.read("end", None)
    assert got.iteration_s is None and got.detail.startswith(reason)


def test_a_loop_that_cannot_be_built_is_a_reading_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Path:
        raise OSError("cc failed: no compiler")
    monkeypatch.setattr(reference, "binary", broken)
    got = reference.read("start", None)
    assert got.iteration_s is None and "cannot build constant.c: cc failed" in got.detail


def _facts(*seconds: float | None, calibrated: float | None = None) -> CampaignFacts:
    moments = ("start", "resume", "end")[-len(seconds):] if len(seconds) < 3 else ("start", "resume", "end")
    readings = tuple(Reading(m, float(i), 1, s, 0.01, "" if s else "cc failed")
                     for i, (m, s) in enumerate(zip(moments, seconds, strict=True)))
    return replace(FACTS, speed=readings, calibrated_s=calibrated, calibrated_at=0.0 if calibrated else None)


def test_the_speed_line_says_what_was_read_and_warns_only_beyond_the_loops_own_steps() -> None:
    assert speed.line(FACTS) is None  # a campaign stored before readings
    calm = _facts(0.0020, 0.0021)
    assert speed.warning(calm) is None
    line = speed.line(calm)
    assert line is not None and not line.startswith("WARNING")
    assert "an iteration of the reference loop (probes/c/constant.c on CPU 1) took 2 ms at the resume and 2.1 ms " \
           "at the end;" in line
    assert "no calibration" in line

    changed = _facts(0.0020, 0.0023)  # 15 % slower at the end than at the start
    assert speed.warning(changed) == "its speed changed by 15% while the campaign ran"
    assert (speed.line(changed) or "").startswith("WARNING: ")

    slow_day = _facts(0.0020, 0.0020, calibrated=0.0014)  # steady, but 1.43 times its calibration
    assert speed.warning(slow_day) == "an iteration took 1.43 times as long as in that calibration"
    assert "calibration of 1970-01-01 00:00 UTC read 1.4 ms" in (speed.line(slow_day) or "")
    assert speed.warning(_facts(0.0020, calibrated=0.00195)) is None

    failed = _facts(None, 0.0020)
    assert "took — at the resume (not read: cc failed) and 2 ms at the end" in (speed.line(failed) or "")
    assert speed.warning(failed) is None


def test_a_fleets_readings_are_said_per_machine_and_a_workers_change_is_its_own() -> None:
    own = (Reading("start", 0.0, 1, 0.0020), Reading("end", 9.0, 1, 0.0020))
    worker = (Reading("worker's start", 1.0, 1, 0.0030, machine="w2"), Reading("worker's start", 2.0, 1, 0.0031,
                                                                                machine="w3"))
    fleet = replace(FACTS, speed=own + worker)
    line = speed.line(fleet) or ""
    assert ("took 2 ms at the start and 2 ms at the end on machine m; 3 ms at the worker's start on machine w2; "
            "3.1 ms at the worker's start on machine w3;") in line
    assert speed.warning(fleet) is None  # other machines may be other hardware: the Machines table says how
    assert speed.typical(fleet) == 0.002  # the campaign's own machine's
    moved = replace(FACTS, speed=(Reading("worker's start", 1.0, 1, 0.0030, machine="w2"),
                                  Reading("worker's start", 5.0, 1, 0.0040, machine="w2")))
    assert speed.warning(moved) == "its speed changed by 33% on machine w2 while the campaign ran"
    assert speed.typical(moved) == 0.0035  # enqueued, run by workers only: theirs


def test_a_diff_says_when_its_two_campaigns_ran_at_different_speeds() -> None:
    assert speed.across(FACTS, _facts(0.002)) == ""  # nothing to set it against
    assert speed.typical(_facts(0.001, 0.004, 0.002)) == 0.002
    same = speed.across(_facts(0.0020, 0.0020), _facts(0.0021))
    assert same == "; the reference loop took 2 ms an iteration in A and 2.1 ms in B"
    other = speed.across(_facts(0.0014), _facts(0.0020))
    assert other.startswith("; THE MACHINE RAN AT ANOTHER SPEED") and "1.43 times as long" in other


def test_a_diff_gives_the_shared_cache_readings_where_both_campaigns_read_it() -> None:
    """The reference loop works in a core's own cache, so two campaigns at one speed can still differ in the
    shared cache that memory-heavy benchmarks feel: diff gives both medians, and says nothing where either
    campaign went without (a short one)."""
    def read(facts: CampaignFacts, *shares: float) -> CampaignFacts:
        return replace(facts, speed=tuple(replace(r, shared_held=h) for r, h in zip(facts.speed, shares, strict=True)))
    a, b = read(_facts(0.0020, 0.0020), 0.80, 0.90), read(_facts(0.0021), 0.25)
    assert speed.held(a) == pytest.approx(0.85) and speed.held(_facts(0.0020)) is None
    assert speed.across(a, b) == ("; the reference loop took 2 ms an iteration in A and 2.1 ms in B; the cache the "
                                  "cores share with other tenants read 85% ours in A and 25% in B, which the loop "
                                  "cannot see (methodology §13, \"The shared cache\")")
    assert "shared" not in speed.across(a, _facts(0.0021))
    slower = speed.across(a, read(_facts(0.0030), 0.25))
    assert "1.50 times as long" in slower and slower.endswith("may be the machine's; the cache the cores share with "
                                                              "other tenants read 85% ours in A and 25% in B, which "
                                                              "the loop cannot see (methodology §13, \"The shared "
                                                              "cache\")")


def test_a_reading_taken_after_the_analysis_is_in_the_next_one(tmp_path: Path) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=2, iterations=40)
    assert current_analysis(store, cid).campaign.speed == ()
    # the closing reading comes after the last execution: the stored analysis must not hide it
    store.record_speed(cid, "machine-1", 5.0, asdict(Reading("end", 5.0, 1, 0.002, 0.01)))
    later = store.campaign(cid).created + 100
    store.record_calibration("machine-1", later, {"created": later, "iteration_ms": 1.9})
    facts = current_analysis(store, cid).campaign
    assert facts.speed == (Reading("end", 5.0, 1, 0.002, 0.01, machine="machine-1"),)  # with who took it
    assert facts.calibrated_s is None  # made after the campaign: not the one it was judged with
    store.record_calibration("machine-1", 0.5, {"created": 0.5, "lengths": [{"iterations": 700, "iteration_ms": 1.6},
                                                                            {"iterations": 100, "iteration_ms": 1.4}]})
    store.record_speed(cid, "machine-1", 6.0, asdict(Reading("end", 6.0, 1, 0.002, 0.01)))
    facts = current_analysis(store, cid).campaign
    assert (facts.calibrated_s, facts.calibrated_at) == (0.0014, 0.5)  # its shortest length's iteration


def test_the_machine_says_when_it_booted_and_which_cpu_it_is_where_the_model_name_is_generic() -> None:
    env = environment.capture()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", env["booted"] or "")  # Linux has /proc/stat
    cpu = {"cpu family": "25", "model": "1", "stepping": "1", "microcode": "0x1000065", "model name": "AMD EPYC"}
    assert environment._signature(cpu) == "cpu family 25, model 1, stepping 1, microcode 0x1000065"
    assert environment._signature({"model name": "a CPU without the fields"}) is None


def test_doctor_sets_the_speed_now_against_the_calibration_it_finds() -> None:
    now = Reading("doctor", 0.0, 1, 0.002)
    alone = reference.advice(now, None)
    assert (alone.ok, alone.state) == (True, "2 ms an iteration") and "bridgebench calibrate" in alone.advice
    slow = reference.advice(now, {"created": 0.0, "lengths": [{"iterations": 100, "iteration_ms": 1.4}]})
    assert not slow.ok and "1.4 ms in the calibration of 1970-01-01 (1.43 times as long)" in slow.state
    assert "another host" in slow.advice
    assert reference.advice(now, {"created": 0.0, "iteration_ms": 1.95}).ok  # within the loop's own steps
    steady = reference.advice(Reading("doctor", 0.0, 1, 0.002, 0.0042), None)
    assert steady.state == "2 ms an iteration, interquartile range 0.42 %"  # the loop's own spread
    failed = reference.advice(Reading("doctor", 0.0, 1, None, None, "cc failed"), None)
    assert (failed.ok, failed.state, failed.advice) == (False, "not read", "cc failed")


def test_doctor_reads_the_speed_and_finds_this_machines_calibration_in_the_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    machine = environment.machine_id(environment.capture())
    store.record_calibration(machine, 1.0, {"created": 1.0, "iteration_ms": 1e6})  # a loop of 1000 s: apart
    store.close()
    done = bridgebench("doctor", "--json", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    speed_now = next(f for f in json.loads(done.stdout)["findings"] if f["topic"] == "speed now (reference loop)")
    assert not speed_now["ok"] and "ms in the calibration of 1970-01-01" in speed_now["state"]
    missing = bridgebench("doctor", "--json", "--store", str(tmp_path / "none.sqlite"), cwd=tmp_path)
    assert missing.returncode == 0 and "no calibration" in missing.stdout  # never fails
    assert not (tmp_path / "none.sqlite").exists()


def test_a_calibration_says_which_boot_and_cpu_it_was_made_on_and_reports_and_doctor_say_when_they_differ(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    env = {"booted": "2026-11-24 06:00:00 UTC", "cpu_signature": "cpu family 25, model 17", "hostname": "vm"}
    made = judge_lengths({100: [rng.normal(1.4e-3, 1e-5, 100) for _ in range(5)]}, "m", reference.described(env))
    record = made.to_json()
    assert record["described"] == {"booted": "2026-11-24 06:00:00 UTC", "cpu_signature": "cpu family 25, model 17"}
    assert reference.elsewhere(record, env) is None  # the same boot and CPU
    now = {**env, "booted": "2026-11-27 07:39:41 UTC", "cpu_signature": "cpu family 25, model 1"}
    said = reference.elsewhere(record, now)
    assert said == ("the calibration was made on another CPU (cpu family 25, model 17; now cpu family 25, model 1) "
                    "and another boot (2026-11-24 06:00:00 UTC; now 2026-11-27 07:39:41 UTC)")
    assert reference.elsewhere({"iteration_ms": 1.4}, now) is None  # stored before calibrations said
    slow = reference.advice(Reading("doctor", 0.0, 1, 0.002), record, now)
    assert not slow.ok and "another boot" in slow.advice
    # a campaign of the later boot, judged with that calibration: its report's line says so
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=2, iterations=40)
    with store.transaction() as db:
        db.execute("UPDATE campaign SET environment_json=?", (json.dumps(now),))
    store.record_calibration("machine-1", 0.5, {**record, "created": 0.5})
    store.record_speed(cid, "machine-1", 5.0, asdict(Reading("start", 5.0, 1, 0.002, 0.01)))
    facts = current_analysis(store, cid).campaign
    assert facts.calibrated_elsewhere == said and said in (speed.line(facts) or "")


def test_the_speed_line_says_how_much_of_the_shared_cache_was_ours_where_it_was_read() -> None:
    facts = _facts(0.0020, 0.0021)
    read = replace(facts, speed=(replace(facts.speed[0], shared_held=0.28), facts.speed[1]))
    assert "shared" not in (speed.line(facts) or "")
    assert ("; the cache the cores share with other tenants (probes/c/chase.c: where a load over a quarter of it lay "
            "between one from memory, 0 %, and one in a core's own cache, 100 %) read 28% at the resume;"
            ) in (speed.line(read) or "")


def test_a_campaign_with_a_minute_or_more_reads_the_shared_cache_and_a_shorter_one_does_not(
        basic_study: Path, tmp_path: Path) -> None:
    """engine.SHARED_CACHE_FROM_S: the fixture's cells settle in seconds either way."""
    held = {}
    for cap in ("1.5", "60"):
        store = tmp_path / f"s{cap}.sqlite"
        done = bridgebench("run", str(basic_study), "--until", "ci=50%", "--max-executions", "3", "--max-time", cap,
                           "--store", str(store), "--report-dir", str(tmp_path / cap), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        readings = [json.loads(r) for (r,) in rows(store, "SELECT record_json FROM speed_reading ORDER BY taken")]
        held[cap] = [r.get("shared_held") for r in readings]
    assert held["1.5"] == [None, None]
    assert len(held["60"]) == 2 and all(h is not None and 0 <= h <= 1 for h in held["60"]), held


def test_a_run_says_the_speed_it_opened_at_against_the_campaigns_calibration(tmp_path: Path) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=2, iterations=40)
    assert speed_now(store, cid) is None  # no reading yet
    store.record_speed(cid, "machine-1", 5.0, asdict(Reading("start", 5.0, 1, 0.002, 0.01)))
    assert speed_now(store, cid) == ("machine speed: 2 ms an iteration, interquartile range 1 % (no calibration of "
                                     "this machine in the store to set it against: run `bridgebench calibrate` once "
                                     "on a day it runs as usual)")
    store.record_calibration("machine-1", 0.5, {"created": 0.5, "iteration_ms": 1.4})
    said = speed_now(store, cid) or ""
    assert said.startswith("machine speed: 2 ms an iteration, interquartile range 1 %; 1.4 ms in the calibration of "
                           "1970-01-01 (1.43 times "
                           "as long); WARNING: not the machine as calibrated")


def test_a_child_started_on_a_cpu_runs_there_and_the_harness_keeps_its_own() -> None:
    mine = os.sched_getaffinity(0)
    cpu = max(mine)
    with spawning_on(cpu):
        child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                               capture_output=True, text=True, check=True)
    assert child.stdout.strip() == f"[{cpu}]" and os.sched_getaffinity(0) == mine
    with pytest.raises(RuntimeError), spawning_on(cpu):
        raise RuntimeError  # put back whatever happens
    assert os.sched_getaffinity(0) == mine


def test_reference_tracking_tells_slow_swings_from_noise_at_the_iterations_own_scale() -> None:
    from evidence.reference_tracking import ADJACENT, adjacent

    assert adjacent([1.0] * (ADJACENT - 1)) is None  # too short to say
    swing = [1.0 + 0.01 * i for i in range(20)]  # a slow swing: adjacent iterations alike, lag-1 near 1
    sd, step, lag = adjacent(swing) or (0.0, 0.0, 0.0)
    assert step < sd / 5 and lag > 0.8
    flicker = [1.0, 1.1] * 10  # a change every iteration: adjacent ones apart, lag-1 at -1
    sd, step, lag = adjacent(flicker) or (0.0, 0.0, 0.0)
    assert step > sd and lag < -0.9


def test_doctor_names_what_takes_memory_back_from_the_kernels_own_files(tmp_path: Path) -> None:
    """DAMON's pageout and the balloon's free page reporting, as this project's VM has them, read from a
    copy of the files that say so."""
    assert environment.memory_taken_back(tmp_path) == []  # a machine without either
    kdamond = tmp_path / "kernel/mm/damon/admin/kdamonds/0"
    (kdamond / "contexts/0/schemes/0").mkdir(parents=True)
    (kdamond / "state").write_text("on\n")
    (kdamond / "contexts/0/schemes/0/action").write_text("stat\n")
    assert environment.memory_taken_back(tmp_path) == []  # watching is not taking
    (kdamond / "contexts/0/schemes/0/action").write_text("pageout\n")
    balloon = tmp_path / "bus/virtio/drivers/virtio_balloon/virtio0"
    balloon.mkdir(parents=True)
    balloon.joinpath("features").write_text("0110000100000000\n")  # stats, deflate on OOM, no reporting
    assert environment.memory_taken_back(tmp_path) == ["DAMON pages out idle memory (kdamond 0)"]
    balloon.joinpath("features").write_text("0110010100000000\n")  # bit 5: free page reporting
    (kdamond / "state").write_text("off\n")
    assert environment.memory_taken_back(tmp_path) == [
        "the virtio balloon reports freed pages to the host (virtio0)"]


def test_doctor_reads_steal_time_and_whether_cpu_times_leave_it_out(tmp_path: Path) -> None:
    """Steal from /proc/stat's eighth field; whether the kernel keeps it out of CPU times from its config,
    /proc/config.gz first, else /boot/config-RELEASE. Copies of the files, as this project's VM has them."""
    import gzip
    import platform
    proc, boot = tmp_path / "proc", tmp_path / "boot"
    proc.mkdir()
    boot.mkdir()
    assert environment.steal_time(proc, boot) == (None, None)  # nothing to read: unknown, not "none"
    (proc / "stat").write_text("cpu  600 0 100 250 0 0 0 50 0 0\ncpu0 300 0 50 125 0 0 0 25 0 0\n")
    assert environment.steal_time(proc, boot) == (0.05, None)  # 50 of 1000 ticks
    (boot / f"config-{platform.release()}").write_text("CONFIG_PARAVIRT=y\n# CONFIG_PARAVIRT_TIME_ACCOUNTING is "
                                                       "not set\n")
    assert environment.steal_time(proc, boot) == (0.05, False)
    (proc / "config.gz").write_bytes(gzip.compress(b"CONFIG_PARAVIRT=y\nCONFIG_PARAVIRT_TIME_ACCOUNTING=y\n"))
    assert environment.steal_time(proc, boot) == (0.05, True)  # the running kernel's own config wins
    (proc / "config.gz").write_bytes(b"not gzip")
    assert environment.steal_time(proc, boot) == (0.05, False)  # unreadable: the file in /boot
