"""Load mode end to end (issue #10, part 1): a study declares servers and load; `bridgebench load` checks
every server's answers, measures saturation closed-loop, then constant rates at fractions of it and one
above it, each run a fresh server; it stores every run, resumes without losing or repeating one, and
reports the figures with intervals over process executions, the plots, and the overload row. The servers
are real (tests/fixtures/study-load/target.py on 127.0.0.1); the runs last about a second."""

from __future__ import annotations

import json
import math
import re
import shutil
import signal
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bridgebench.loadtest import analysis as load_analysis
from bridgebench.loadtest import driver
from bridgebench.loadtest.analysis import predict
from bridgebench.loadtest.phases import phases
from bridgebench.store import Store
from bridgebench.study import StudyError, read_study
from tests.conftest import FIXTURES, bridgebench, competitor, start_bridgebench, survivors, wait_for_executions

STUDY = FIXTURES / "study-load"


@pytest.fixture
def study(tmp_path: Path) -> Path:
    copy = tmp_path / "study-load"
    shutil.copytree(STUDY, copy)
    return copy


def edit(study: Path, old: str, new: str) -> None:
    path = study / "study.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def run_load(study: Path, tmp_path: Path, *extra: str, timeout: float = 300) -> tuple[int, str, str]:
    done = bridgebench("load", str(study), "--quick", "--store", str(tmp_path / "store.sqlite"), "--report-dir",
                       str(tmp_path / "reports"), "--build-dir", str(tmp_path / "build"), *extra, cwd=tmp_path,
                       timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def executions(tmp_path: Path) -> list[tuple]:
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        return db.execute("SELECT seq, benchmark, mechanism, pexec, status, info_json FROM execution "
                          "ORDER BY seq").fetchall()


# --- the study file ----------------------------------------------------------------------------------
def test_a_load_study_declares_servers_requests_and_phases() -> None:
    study = read_study(STUDY)
    assert study.servers == ["plain", "slow"] and study.benchmarks == {}
    assert study.mechanisms["plain"].ready == "/ready"
    assert study.load is not None and study.load.connections == 4
    assert [r.name for r in study.load.requests] == ["valid", "invalid"]
    assert [r.expect_status for r in study.load.requests] == [200, 400]
    assert study.load.budgets["quick"].process_executions == 2
    assert study.load.budgets["quick"].duration_s == 0.6
    assert [(p.name, p.fraction) for p in phases(study.load)] == [
        ("saturation", None), ("rate-25%", 0.25), ("rate-50%", 0.5), ("overload-200%", 2.0)]


@pytest.mark.parametrize(("old", "new", "message"), [
    ('serve = ["python3", "{study}/target.py", "{port}"]\n', 'serve = ["x"]\nrun = ["y"]\n',
     r"mechanisms\.plain: expected either 'run' .* or 'serve'"),
    ('ready = "/ready"\n', 'ready = "ready"\n', r"mechanisms\.plain\.ready: expected an HTTP path"),
    ("fractions = [0.25, 0.5]", "fractions = [0.25, 1.5]", r"load\.fractions: expected a non-empty list of "
     "fractions"),
    ("overload = 2.0", "overload = 0.5", r"load\.overload: expected a factor above 1"),
    ('body_file = "valid.json"', 'body_file = "missing.json"', r"load\.requests\.valid\.body_file: no such file"),
    ('method = "POST"', 'method = "post"', r"load\.requests\.valid\.method: expected an HTTP method"),
    ("expect_status = 200", "expect_status = 99", r"load\.requests\.valid\.expect_status: expected an HTTP status"),
    ("connections = 4", "connections = 0", r"load\.connections: expected a positive integer"),
    ("expect_status = 400", "expect_status = 400\nexpect_status_of = { nginx = 200 }",
     r"load\.requests\.invalid\.expect_status_of: no server nginx"),
])
def test_a_malformed_load_table_is_a_one_line_error_with_its_line(study: Path, old: str, new: str,
                                                                    message: str) -> None:
    edit(study, old, new)
    with pytest.raises(StudyError, match=message) as caught:
        read_study(study)
    assert "\n" not in str(caught.value) and str(study / "study.toml") + ":" in str(caught.value)


def test_load_without_a_server_and_a_server_in_a_benchmark_are_refused(study: Path) -> None:
    text = (study / "study.toml").read_text()
    no_servers = text.replace('serve = ["python3", "{study}/target.py", "{port}"]', 'run = ["true"]').replace(
        'serve = ["python3", "{study}/target.py", "{port}", "--delay", "0.002"]', 'run = ["true"]')
    for line in ('ready = "/ready"\n', "ready_timeout_s = 20\n"):
        no_servers = no_servers.replace(line, "")
    (study / "study.toml").write_text(no_servers)
    with pytest.raises(StudyError, match=r"load: no mechanism to load: declare at least one with 'serve'"):
        read_study(study)
    (study / "study.toml").write_text(text + '\n[benchmarks.b]\nparam = 1\nmechanisms = ["plain"]\n')
    with pytest.raises(StudyError, match=r"benchmarks\.b\.mechanisms: plain is a server, measured under \[load\]"):
        read_study(study)


def test_run_and_diff_point_a_load_study_to_the_load_command(study: Path, tmp_path: Path) -> None:
    done = bridgebench("run", str(study), "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "has no benchmarks to time in iterations; its servers are measured with `bridgebench load" in done.stderr
    assert not (tmp_path / "s.sqlite").exists()  # refused before any store was created
    timed = bridgebench("load", str(FIXTURES / "study-basic"), "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert timed.returncode == 2
    assert "declares no [load]; its mechanisms are timed with `bridgebench run`" in timed.stderr
    assert not (tmp_path / "s.sqlite").exists()


# --- the model behind the overload row ---------------------------------------------------------------
def simulate(rate: float, service_rate: float, warmup_s: float, duration_s: float) -> np.ndarray:
    """Latencies of a FIFO server answering one request every 1/service_rate, requests due every 1/rate,
    recorded for those due after the warm-up; unanswered at the end: censored at the end."""
    end = warmup_s + duration_s
    due = np.arange(0, end, 1 / rate)
    finish = np.empty_like(due)
    free = 0.0
    for i, t in enumerate(due):
        free = max(free, t) + 1 / service_rate
        finish[i] = free
    latency = np.where(finish <= end, finish - due, end - due)
    return latency[due >= warmup_s]


@pytest.mark.parametrize(("rate", "service", "warmup", "duration"), [
    (2000.0, 1000.0, 0.0, 2.0), (5000.0, 3000.0, 0.5, 3.0), (1500.0, 1000.0, 1.0, 1.0)])
def test_the_overload_prediction_matches_a_simulated_fifo_server(rate: float, service: float, warmup: float,
                                                                  duration: float) -> None:
    p = predict(rate, service, warmup, duration)
    simulated = simulate(rate, service, warmup, duration)
    assert p.p50_s == pytest.approx(float(np.percentile(simulated, 50)), rel=0.01, abs=2 / service)
    assert p.max_s == pytest.approx(float(simulated.max()), rel=0.01, abs=2 / service)
    total = warmup + duration
    assert p.formula_max_s == pytest.approx(total * (1 - service / rate))
    assert p.formula_p50_s == pytest.approx(total / 2 * (1 - service / rate))


# --- campaigns ---------------------------------------------------------------------------------------
def test_a_quick_load_campaign_checks_measures_every_phase_and_reports(study: Path, tmp_path: Path, marker: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    edit(study, '[mechanisms.plain]\n', f'[mechanisms.plain]\nenv = {{ PROBE_MARKER = "{marker}" }}\n')
    code, stdout, stderr = run_load(study, tmp_path)
    assert code == 0, stderr
    assert "check passed" in stderr and "load campaign 1" in stdout and "overload, plain" not in stdout
    rows = executions(tmp_path)
    assert len(rows) == 4 * 2 * 2  # 4 phases × 2 servers × 2 process executions, each stored once
    assert {r[4] for r in rows} == {"ok"}
    assert [r[1] for r in rows[:4]] == ["saturation"] * 4  # every saturation run comes first
    results = {(r[1], r[2], r[3]): json.loads(r[5]) for r in rows}
    for server in ("plain", "slow"):
        saturation = np.mean([results["saturation", server, p]["achieved_rate"] for p in (0, 1)])
        for phase, fraction in (("rate-25%", 0.25), ("rate-50%", 0.5), ("overload-200%", 2.0)):
            for pexec in (0, 1):
                got = results[phase, server, pexec]
                assert got["mode"] == "constant-rate"
                assert got["intended_rate"] == pytest.approx(fraction * saturation, rel=1e-9)
                # Every request due in the recorded window is completed, censored or an error, however slow
                # the machine: the count is the rate's, not the server's.
                due = got["intended_rate"] * got["duration_s"]
                assert abs(got["completed"] + got["censored"] + sum(got["errors"].values()) - due) <= 1
                assert got["statuses"].keys() <= {"200", "400"} and got["variants"].keys() <= {"valid", "invalid"}
                assert got["answered_variants"].keys() == {"valid", "invalid"}  # warm-up included
                # Not asked of the overload: its window's requests wait behind the warm-up's backlog, and
                # when the machine serves at under half the saturation it reached earlier (a busy CI runner),
                # none completes before the hard bound, all censored.
                if fraction < 1:
                    assert got["variants"].keys() == {"valid", "invalid"}
    assert survivors(marker) == []  # every server of the campaign was stopped whole

    reports = tmp_path / "reports"
    report = json.loads((reports / "load-fixture-1.json").read_text())
    cells = {(c["phase"], c["mechanism"]): c for c in report["cells"]}
    for cell in cells.values():
        assert cell["ok"] == cell["planned"] == 2
        p50 = cell["latency"]["p50"]
        # Two process executions: an estimate and no interval (too few), as in timing campaigns.
        assert p50["executions"] == 2 and p50["low"] is None and p50["high"] is None and p50["value"] > 0
        assert cell["distribution"][-1][0] == 100 and cell["merged"]["max"] == cell["distribution"][-1][1]
    assert all(cells["overload-200%", s]["prediction"] for s in ("plain", "slow"))
    assert not any(cells["rate-50%", s]["prediction"] for s in ("plain", "slow"))
    assert {(r["a"], r["b"]) for r in report["ratios"]} == {("plain", "slow"), ("slow", "plain")}
    markdown = (reports / "load-fixture-1.md").read_text()
    for heading in ("## Answer check", "## Saturation (closed loop)", "## Saturation ratios", "## Constant rates",
                    "## Overload"):
        assert heading in markdown
    assert "| invalid | Python, 2 ms a request | agrees | 400 |" in markdown
    assert re.search(r"Machine speed: an iteration of the reference loop \(probes/c/constant\.c[^)]*\) took "
                     r"[\d.]+ [mµ]?s at the start and [\d.]+ [mµ]?s at the end", markdown)  # a load campaign too
    page = (reports / "load-fixture-1.html").read_text()
    assert page.count("<polyline") >= 4 * 2 + 2 * 2  # a percentile line per phase and server, p50/p99 per server
    assert "Latency against rate" in page and "Latency by percentile" in page and "<script" not in page
    again = bridgebench("report", "1", "--store", str(tmp_path / "store.sqlite"), "--format", "markdown",
                        cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == markdown
    refused = bridgebench("diff", "1", "1", "--store", str(tmp_path / "store.sqlite"), cwd=tmp_path)
    assert refused.returncode == 2 and "campaign 1 is a load campaign" in refused.stderr
    # The analysis is kept in the store as a timing campaign's is: reading it again merges no histogram.
    store = Store(tmp_path / "store.sqlite")
    try:
        with monkeypatch.context() as patch:
            patch.setattr(driver, "merge", lambda _results: pytest.fail("analysed again"))
            kept = load_analysis.current(store, 1)
    finally:
        store.close()
    assert kept.to_json() == report and {c.ok for c in kept.cells} == {2}
    assert all(len(c.per_execution) == 2 and c.per_execution[0].latency["p50"] > 0 for c in kept.cells)


def test_a_server_that_answers_differently_fails_the_check_before_any_run(study: Path, tmp_path: Path) -> None:
    edit(study, '"--delay", "0.002"]', '"--delay", "0.002", "--status", "200"]')
    code, _, stderr = run_load(study, tmp_path)
    assert code == 3, stderr
    assert "request:invalid on slow: disagrees (expected 400); nothing was timed" in stderr
    assert not (tmp_path / "store.sqlite").exists() or executions(tmp_path) == []


def test_a_server_that_dies_under_load_is_a_crashed_run_and_the_campaign_goes_on(study: Path,
                                                                                 tmp_path: Path) -> None:
    edit(study, '"--delay", "0.002"]', '"--delay", "0.002", "--exit-after", "30"]')
    code, _, stderr = run_load(study, tmp_path)
    assert code == 4, stderr
    assert "load run(s) failed" in stderr.splitlines()[-1]
    by = {(r[1], r[2], r[3]): r[4] for r in executions(tmp_path)}
    assert len(by) == 16
    assert {by["saturation", "slow", p] for p in (0, 1)} == {"crashed"}
    assert {s for (phase, m, _), s in by.items() if m == "slow" and phase != "saturation"} == {"no rate"}
    assert {s for (_, m, _), s in by.items() if m == "plain"} == {"ok"}
    markdown = (tmp_path / "reports" / "load-fixture-1.md").read_text()
    assert "the server exited (status 9) during the load run" in markdown


def test_an_interrupted_load_campaign_resumes_without_losing_or_repeating_a_run(study: Path,
                                                                               tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    args = ("load", str(study), "--quick", "--store", str(store), "--report-dir", str(tmp_path / "reports"),
            "--build-dir", str(tmp_path / "build"))
    proc = start_bridgebench(*args, cwd=tmp_path)
    try:
        wait_for_executions(store, 3, timeout=120)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "continue with `bridgebench load" in stderr
    stored_before = {r[0]: r[5] for r in executions(tmp_path)}
    assert 3 <= len(stored_before) < 16
    resumed = bridgebench(*args[:2], "--resume", *args[3:], cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    rows = executions(tmp_path)
    assert [r[0] for r in rows] == list(range(16))  # every planned run once
    assert all(stored_before[r[0]] == r[5] for r in rows if r[0] in stored_before)  # nothing redone
    again = bridgebench(*args[:2], "--resume", *args[3:], cwd=tmp_path)
    assert again.returncode == 2 and "no unfinished load campaign" in again.stderr
    assert math.isfinite(json.loads((tmp_path / "reports" / "load-fixture-1.json").read_text())["cells"][0]
                         ["achieved"]["value"])


def test_load_runs_beside_a_cpu_bound_competitor_are_flagged_and_the_report_says_so(study: Path,
                                                                                    tmp_path: Path) -> None:
    with competitor():
        code, _, stderr = run_load(study, tmp_path, "--mechanisms", "slow", "-p", "1")
    assert code == 0, stderr
    report = json.loads((tmp_path / "reports" / "load-fixture-1.json").read_text())
    flagged = [line for c in report["cells"] for line in c["disturbed"]]
    assert flagged and all("others used" in line for line in flagged), flagged
    markdown = (tmp_path / "reports" / "load-fixture-1.md").read_text()
    assert f"> **Warning:** {len(flagged)} of 4 load runs were disturbed" in markdown
    assert "## Disturbed load runs" in markdown
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        assert db.execute("SELECT count(*) FROM execution WHERE disturbed IS NOT NULL").fetchone()[0] == len(flagged)


@pytest.mark.parametrize(("result", "measured"), [
    # far behind in overload: answered in the warm-up, every measured request still waiting at the end
    ({"mode": "constant-rate", "completed": 0, "answered": 40, "censored": 900, "errors": {}}, True),
    ({"mode": "constant-rate", "completed": 0, "answered": 0, "censored": 900, "errors": {}}, False),  # hung
    ({"mode": "constant-rate", "completed": 0, "answered": 40, "censored": 900, "errors": {"reset": 3}}, False),
    ({"mode": "closed-loop", "completed": 0, "answered": 40, "censored": 0, "errors": {}}, False),
    ({"mode": "constant-rate", "completed": 0, "censored": 900, "errors": {}}, False),  # a driver before "answered"
])
def test_a_run_whose_every_measured_request_is_censored_is_a_measurement(result: dict, measured: bool) -> None:
    from bridgebench.campaign.loadtest import all_censored

    assert all_censored(result) is measured


# --- an adaptive load campaign (`load --until ci=…`) ----------------------------------------------------
def test_an_adaptive_load_campaign_adds_runs_until_its_figures_are_known_and_keeps_its_targets(
        study: Path, tmp_path: Path) -> None:
    code, stdout, stderr = run_load(study, tmp_path, "--mechanisms", "slow", "-p", "2", "--until", "ci=50%",
                                    "--max-executions", "6", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["adaptive"]["first_process_executions"] == 2 and report["adaptive"]["max_process_executions"] == 6
    for cell in report["cells"]:
        decision = cell["adaptive"]
        assert decision["state"] in ("settled", "capped"), cell
        runs = len(cell["per_execution"])
        # an interval needs 5 runs: no cell can settle before, and a capped one has its 6
        assert runs >= load_analysis.MIN_RUNS and (decision["state"] == "settled" or runs == 6), cell
        if decision["state"] == "settled":
            assert decision["half_width"] <= 0.5 and cell["achieved"]["low"] is not None
    # The constant rates aim at the mean of the first 2 saturation runs, whatever the rounds added after.
    rows = executions(tmp_path)
    first = [json.loads(r[5])["achieved_rate"] for r in rows if r[1] == "saturation" and r[3] < 2]
    assert len([r for r in rows if r[1] == "saturation"]) > 2
    for seq, phase, _mech, _pexec, status, info in rows:
        if phase.startswith("rate-") and status == "ok":
            fraction = float(phase.removeprefix("rate-").removesuffix("%")) / 100
            assert json.loads(info)["intended_rate"] == pytest.approx(fraction * sum(first) / len(first)), seq
    markdown = (tmp_path / "reports" / "load-fixture-1.md").read_text()
    assert "Adaptive budget: after its first 2 runs" in markdown
    assert "## Adaptive budget: how each cell ended" in markdown


def test_max_time_stops_an_adaptive_load_campaign_with_cells_out_of_time(study: Path, tmp_path: Path) -> None:
    # Every run lasts at least its 0.8 s of warm-up and recording, so 5 s hold at most 6 of the 20 runs the
    # 4 cells need for an interval, on any machine.
    code, stdout, stderr = run_load(study, tmp_path, "--mechanisms", "slow", "-p", "1", "--until", "ci=1%",
                                    "--max-executions", "10", "--max-time", "5", "--json")
    assert code == 0, stderr
    states = [c["adaptive"]["state"] for c in json.loads(stdout)["cells"] if c["adaptive"]]
    assert "out of time" in states and "settled" not in states


@pytest.mark.parametrize(("extra", "message"), [
    (("--max-time", "10"), "give --until ci=SHARE"),
    (("--until", "decided"), "--until decided: a load campaign settles its cells by their intervals"),
    (("--until", "ci=150%"), "expected a share above 0 and below 1"),
    (("--until", "ci=5%", "--max-executions", "1"), "expected at least the 2 runs"),
])
def test_adaptive_load_options_are_refused_in_one_line(study: Path, tmp_path: Path, extra: tuple[str, ...],
                                                       message: str) -> None:
    code, _, stderr = run_load(study, tmp_path, *extra)
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1, stderr


def test_an_adaptive_load_cell_is_judged_by_its_least_known_figure() -> None:
    from bridgebench.loadtest.result import LoadCell
    from bridgebench.stats import Estimate

    def cell(achieved: Estimate | None, cpu: Estimate | None) -> LoadCell:
        return LoadCell("saturation", "m", None, 5, 5, (), (), None, achieved, {}, {}, {}, {}, 0, 0, 0, {}, {}, (),
                        server_us=cpu)

    narrow = Estimate(100.0, 99.0, 101.0, 0.99, "t", 5)
    wide = Estimate(10.0, 8.0, 12.0, 0.99, "t", 5)
    none = Estimate(10.0, None, None, 0.99, "too few", 4)
    assert load_analysis.widest(cell(narrow, wide)) is wide
    assert load_analysis.widest(cell(narrow, none)) is none
    assert load_analysis.widest(cell(narrow, None)) is narrow
    assert load_analysis.widest(cell(None, None)) is None


def test_check_checks_a_servers_answers_as_load_does_and_exits_3_on_a_wrong_one(study: Path, tmp_path: Path) -> None:
    ok = bridgebench("check", str(study / "study.toml"), "--build-dir", str(tmp_path / "build"), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "every server gave each of 2 requests the expected status" in ok.stdout + ok.stderr
    edit(study, '"--delay", "0.002"]', '"--status", "500"]')  # the slow server now answers 500 to everything
    bad = bridgebench("check", str(study / "study.toml"), "--build-dir", str(tmp_path / "build"), cwd=tmp_path)
    assert bad.returncode == 3, bad.stderr
    assert "answer check failed" in bad.stderr and "on slow" in bad.stderr and "nothing was timed" in bad.stderr
