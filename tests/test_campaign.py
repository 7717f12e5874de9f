"""End-to-end behaviour of `bridgebench run` on the fixture study: failures are recorded and the campaign
goes on; an interrupted or killed campaign resumes without losing or duplicating an iteration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.conftest import add_benchmark, bridgebench, gated_campaign, rows, stored_times


def test_crash_hang_and_garbage_are_recorded_and_the_campaign_goes_on(basic_study: Path, tmp_path: Path) -> None:
    for name in ("crash", "hang", "garbage"):
        add_benchmark(basic_study, name)
    result = bridgebench("run", str(basic_study), "--timeout", "2", "--json", cwd=tmp_path)
    assert result.returncode == 4, result.stderr  # completed, with failed executions
    assert "process execution(s) failed" in result.stderr
    report = json.loads(result.stdout)
    cells = {(c["benchmark"], c["mechanism"]): c for c in report["cells"]}
    assert report["campaign"]["executions_stored"] == report["campaign"]["executions_planned"] == 16
    assert cells[("ok", "a")]["executions_ok"] == 2
    assert cells[("ok", "a")]["steady_performance"] is not None
    assert {f["status"] for f in cells[("crash", "b")]["failures"]} == {"crashed"}
    assert "deliberate crash" in cells[("crash", "b")]["failures"][0]["stderr_tail"]
    assert {f["status"] for f in cells[("hang", "a")]["failures"]} == {"timeout"}
    assert {f["status"] for f in cells[("garbage", "a")]["failures"]} == {"protocol violation"}
    db = tmp_path / "results" / "bridgebench.sqlite"
    statuses = dict(rows(db, "SELECT status, count(*) FROM execution GROUP BY status"))
    assert statuses == {"ok": 4, "crashed": 4, "timeout": 4, "protocol violation": 4}
    assert (tmp_path / "results" / "basic-1.md").exists()


def test_disagreeing_mechanisms_fail_the_check_and_nothing_is_timed(basic_study: Path, tmp_path: Path) -> None:
    add_benchmark(basic_study, "wrong")
    result = bridgebench("run", str(basic_study), cwd=tmp_path)
    assert result.returncode == 3
    assert "answer check failed" in result.stderr
    assert "no answer has a majority" in result.stderr
    assert not rows(tmp_path / "results" / "bridgebench.sqlite", "SELECT * FROM execution")


def test_a_failed_check_says_what_each_mechanism_gave_and_how_to_rerun_a_crash(basic_study: Path,
                                                                             tmp_path: Path) -> None:
    add_benchmark(basic_study, "wrong")
    expected = str(sum(i % 7 for i in range(100)))  # what mechanism a computes at the check's size
    basic_study.write_text(basic_study.read_text() + f'expect = "{expected}"\n')
    wrong = bridgebench("run", str(basic_study), cwd=tmp_path)
    assert wrong.returncode == 3
    assert f"gave '{sum(i % 7 for i in range(101))}', expected '{expected}' (the study's expect)" in wrong.stderr
    add_benchmark(basic_study, "checkcrash")
    crashed = bridgebench("run", str(basic_study), "--benchmarks", "checkcrash", cwd=tmp_path)
    assert crashed.returncode == 3
    (line,) = [x for x in crashed.stderr.splitlines() if x.startswith("error: ")]  # the one-line error
    assert "checkcrash on b" in line and "PROBE_MECHANISM=b" in line and "probe.py checkcrash 2 100" in line
    rerun = line.split("to run it by hand: ", 1)[1].rsplit("); nothing was timed", 1)[0]
    assert subprocess.run(["bash", "-c", rerun], capture_output=True).returncode != 0  # it crashes again


def test_malformed_study_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "study.toml"
    bad.write_text('[study]\nname = "x"\n[budget]\niterations = 0\n')
    result = bridgebench("run", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "study.toml:4: budget.iterations: expected a positive integer, got int 0" in lines[0]


def _interrupt_then_resume(basic_study: Path, tmp_path: Path, sig: signal.Signals) -> None:
    db = tmp_path / "results" / "bridgebench.sqlite"
    proc, env = gated_campaign(basic_study, tmp_path, after=3)  # 3 stored, the 4th held at the gate
    os.killpg(proc.pid, sig)  # as Ctrl-C at a terminal: the whole foreground group
    _, stderr = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert "--resume" in stderr
        assert rows(db, "SELECT state FROM campaign") == [("interrupted",)]
    before = stored_times(db)
    assert rows(db, "SELECT count(*) FROM execution")[0][0] == 3  # the one in flight was discarded
    assert len(before) == 3 * 5  # every stored execution whole: no partial executions
    assert _speed_moments(db) == ["start"]  # an interrupted run takes no closing reading

    (tmp_path / "gate").touch()
    result = bridgebench("run", str(basic_study), "--resume", cwd=tmp_path, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    after = stored_times(db)
    assert set(before) <= set(after)  # nothing stored was lost or changed
    assert len(after) == 10 * 5
    assert sorted(r[0] for r in rows(db, "SELECT seq FROM execution")) == list(range(10))
    assert rows(db, "SELECT state FROM campaign") == [("done",)]
    assert _speed_moments(db) == ["start", "resume", "end"]
    # the progress says the machine's speed before the first execution of the run
    progress = result.stderr[:result.stderr.index("[4/10]")]
    assert "machine speed: " in progress and "ms an iteration" in progress
    assert "Machine speed: an iteration of the reference loop (probes/c/constant.c" in result.stdout


def _speed_moments(db: Path) -> list[str]:
    """The reference loop's readings of the campaign, each a real one (reference.py)."""
    readings = [json.loads(r[0]) for r in rows(db, "SELECT record_json FROM speed_reading ORDER BY taken")]
    assert all(r["iteration_s"] > 0 for r in readings), readings
    return [r["moment"] for r in readings]


def test_sigint_mid_campaign_then_resume_loses_and_duplicates_nothing(basic_study: Path, tmp_path: Path) -> None:
    _interrupt_then_resume(basic_study, tmp_path, signal.SIGINT)


def test_killed_harness_then_resume_loses_and_duplicates_nothing(basic_study: Path, tmp_path: Path) -> None:
    _interrupt_then_resume(basic_study, tmp_path, signal.SIGKILL)


def test_resume_refuses_a_changed_study(basic_study: Path, tmp_path: Path) -> None:
    proc, _ = gated_campaign(basic_study, tmp_path, after=1)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=60)
    basic_study.write_text(basic_study.read_text().replace("iterations = 4", "iterations = 6"))
    result = bridgebench("run", str(basic_study), "--resume", cwd=tmp_path)
    assert result.returncode == 2
    assert "has changed since campaign 1 started" in result.stderr


def test_doctor_and_list_speak_json_and_never_fail(tmp_path: Path) -> None:
    result = bridgebench("doctor", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {f["topic"] for f in data["findings"]} >= {"frequency governor", "turbo boost", "ASLR",
                                                       "virtualisation", "load average (1 min)", "memory taken back"}
    assert data["environment"]["cpu_count"] >= 1
    result = bridgebench("list", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "lua-vms" in {s["name"] for s in json.loads(result.stdout)["studies"]}


def test_batch_calibrated_in_the_check_is_reused_by_every_timed_run(basic_study: Path, tmp_path: Path) -> None:
    result = bridgebench("run", str(basic_study), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    assert {r[0] for r in rows(db, "SELECT batch FROM check_answer")} == {7}  # the probe calibrated on "auto"
    infos = rows(db, "SELECT batch, info_json FROM execution")
    assert infos and all(b == 7 and json.loads(i)["given_batch"] == "7" for b, i in infos)


def test_a_benchmark_runs_only_the_mechanisms_it_names(basic_study: Path, tmp_path: Path) -> None:
    with basic_study.open("a") as f:
        f.write('\n[benchmarks.crash]\nparam = 10\nmechanisms = ["a"]\n')
    result = bridgebench("run", str(basic_study), "--json", cwd=tmp_path)
    assert result.returncode == 4, result.stderr  # a's crashes are failed executions; b never ran crash
    report = json.loads(result.stdout)
    assert report["campaign"]["executions_planned"] == 6  # ok: a and b, crash: a; twice each
    assert {(c["benchmark"], c["mechanism"]) for c in report["cells"]} == {("ok", "a"), ("ok", "b"),
                                                                           ("crash", "a")}
    assert {(r["benchmark"], r["mechanism"]) for r in report["check"]} == {("ok", "a"), ("ok", "b"),
                                                                           ("crash", "a")}
    assert {w["benchmark"]: w["mechanisms"] for w in report["workloads"]} == {"ok": ["a", "b"], "crash": ["a"]}
    markdown = (tmp_path / "results" / "basic-1.md").read_text()
    assert "| crash | 10 | a |" in markdown and "| ok | 20000 | all |" in markdown
    # The geometric mean is over the benchmarks both ran, and says so.
    assert "Geometric mean of ratios to a (over ok)" in markdown

    refused = bridgebench("run", str(basic_study), "--benchmarks", "crash", "--mechanisms", "b", cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "none of the mechanisms b runs benchmark crash" in refused.stderr

    with basic_study.open("a") as f:
        f.write('\n[benchmarks.typo]\nparam = 1\nmechanisms = ["c"]\n')
    broken = bridgebench("run", str(basic_study), cwd=tmp_path)
    assert broken.returncode == 2, broken.stderr
    assert "benchmarks.typo.mechanisms: no mechanism c (has: a, b)" in broken.stderr


def test_a_choice_of_mechanisms_leaves_out_the_benchmarks_none_of_them_runs(basic_study: Path,
                                                                             tmp_path: Path) -> None:
    with basic_study.open("a") as f:
        f.write('\n[benchmarks.only-a]\nparam = 10\nmechanisms = ["a"]\n')
    checked = bridgebench("check", str(basic_study), "--mechanisms", "b", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "the same answer on 1 benchmark" in checked.stderr and "1 benchmarks" not in checked.stderr
    done = bridgebench("run", str(basic_study), "--mechanisms", "b", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [w["benchmark"] for w in json.loads(done.stdout)["workloads"]] == ["ok"]
    named = bridgebench("run", str(basic_study), "--mechanisms", "b", "--benchmarks", "ok,only-a", cwd=tmp_path)
    assert named.returncode == 2 and "none of the mechanisms b runs benchmark only-a" in named.stderr


def test_piped_output_answers_the_question_first_and_folds_no_table_cell(basic_study: Path, tmp_path: Path) -> None:
    """Written to a pipe 80 columns wide: the study's question answered on the first line, each table row on
    one line (markdown, where a drawn table would not fit), and the progress as one line an execution."""
    basic_study.write_text(basic_study.read_text().replace('baseline = "a"', 'baseline = "a"\nheadline = "b"'))
    add_benchmark(basic_study, "second")
    done = bridgebench("run", str(basic_study), "-p", "3", "--mechanisms", "a,b", "--benchmarks", "ok,second",
                       cwd=tmp_path, env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Mechanism B vs Mechanism A, 2 benchmarks: ") and lines[0].endswith("(99%)")
    header = next(i for i, line in enumerate(lines) if line.startswith("| Benchmark | Mechanism | Class |"))
    width = lines[header].count(" | ")
    rows = lines[header + 2:header + 6]
    assert {tuple(r.split(" | ")[:2]) for r in rows} == {("| ok", "Mechanism A"), ("| ok", "Mechanism B"),
                                                         ("| second", "Mechanism A"), ("| second", "Mechanism B")}
    assert all(r.endswith(" |") and r.count(" | ") == width for r in rows)  # one row, one line
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 12 and progress[0].startswith("[1/12] basic: ")
    assert progress[-1].startswith("[12/12] ") and " iterations in " in progress[-1]


def test_a_budget_sizes_iterations_per_cell_to_a_time(basic_study: Path, tmp_path: Path) -> None:
    """`constant` takes 1 ms an iteration on any machine: sized to 0.01 s an execution, it makes 10 iterations
    in every timed run; `ok` does real work and gets what this machine needs, within the bounds."""
    add_benchmark(basic_study, "constant")
    text = basic_study.read_text().replace('env = { PROBE_MECHANISM = "b" }\n',
                                           'env = { PROBE_MECHANISM = "b" }\nmin_iterations = 20\n')
    basic_study.write_text(text + "\n[budget.sized]\nprocess_executions = 2\niterations = 40\nexecution_s = 0.01\n"
                           "min_iterations = 3\n")
    done = bridgebench("run", str(basic_study), "--budget", "sized", "--benchmarks", "constant,ok", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    sized = {(b, m): n for b, m, n in rows(db, "SELECT benchmark, mechanism, iterations FROM check_answer")}
    assert sized[("constant", "a")] == 10
    assert sized[("constant", "b")] == 20  # its mechanism asks for at least 20 (a JIT's warm-up, say)
    assert 3 <= sized[("ok", "a")] <= 40 and 20 <= sized[("ok", "b")] <= 40
    made = rows(db, "SELECT e.benchmark, e.mechanism, length(s.data) / 8 FROM execution e JOIN series s ON "
                    "s.execution_id = e.id WHERE s.name = 'seconds'")
    assert len(made) == 8 and all(n == sized[(b, m)] for b, m, n in made)
    md = bridgebench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert "iterations (sized per cell to about 0.01 s an execution, at least 3, at most 40)" in md
    # Iterations given on the command line are what every execution makes.
    fixed = bridgebench("run", str(basic_study), "--budget", "sized", "--benchmarks", "constant", "-i", "7",
                        cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert rows(db, "SELECT DISTINCT iterations FROM check_answer WHERE campaign_id = 2") == [(None,)]
    assert rows(db, "SELECT DISTINCT length(s.data) / 8 FROM execution e JOIN series s ON s.execution_id = e.id "
                    "WHERE e.campaign_id = 2 AND s.name = 'seconds'") == [(7,)]
