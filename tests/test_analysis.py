"""The analysis result: typed, round-trips through the store's cache, the same whatever the number of
processes, computed once (report and diff read the cache), and one ratio rule for report and diff."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bridgebench.protocol import ProbeOutput
from bridgebench.runner import OK, Execution
from bridgebench.store import SCHEMA_VERSION, Store
from bridgebench.timing import analysis
from bridgebench.timing.analysis import Series, analyse, current_analysis
from bridgebench.timing.diff_sides import compare
from bridgebench.timing.result import RESULT_VERSION, Analysis
from tests.conftest import make_campaign, synthetic_series


def test_the_result_round_trips_through_json_unchanged(tmp_path: Path) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite")
    result = analyse(store, cid)
    again = Analysis.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result
    assert again.cells[0].per_execution[0].steady_mask().dtype == bool


def test_a_cached_result_of_another_version_is_computed_again(tmp_path: Path) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite")
    old = analyse(store, cid).to_json() | {"version": RESULT_VERSION - 1}
    store.save_analysis(cid, old)
    assert current_analysis(store, cid).version == RESULT_VERSION
    assert store.analysis(cid)["version"] == RESULT_VERSION
    with pytest.raises(ValueError, match="version"):
        Analysis.from_json(old)


def test_the_result_is_the_same_with_one_process_or_two(tmp_path: Path) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite", benchmarks=("fib", "n body", "json"), pexecs=3,
                               iterations=400)
    one = analyse(store, cid, workers=1)
    two = analyse(store, cid, workers=2)
    assert one == two
    assert any(c.ratio for c in one.cells) and all(c.steady_performance for c in one.cells if c.executions_ok)


@pytest.mark.parametrize(("pexecs", "paired"), [(2, False), (5, True)])
def test_report_and_diff_print_the_same_ratio_for_the_same_pair(tmp_path: Path, pexecs: int, paired: bool) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=pexecs, crash=False)
    result = current_analysis(store, cid)
    comparisons, _ = compare(store, cid, "cpython", cid, "lua/jit")
    for c in comparisons:
        cell = result.cell(c.benchmark, "lua/jit")
        assert cell is not None and cell.ratio is not None
        assert c.ratio == cell.ratio  # the same CI, to the last bit: one rule, one random stream per pair
        assert ("paired by round" in c.ratio.method) == paired


@pytest.fixture(scope="module")
def larger_campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """80 000 iterations: large enough that redoing the analysis would be the bulk of a report's time."""
    path = tmp_path_factory.mktemp("scale") / "s.sqlite"
    store, cid = make_campaign(path, benchmarks=("a", "b", "c", "d"), pexecs=5, iterations=2000, crash=False)
    store.save_analysis(cid, analyse(store, cid).to_json())
    store.close()
    return path, cid


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("analysed again")


def test_report_and_diff_read_the_cached_analysis_without_resampling(larger_campaign: tuple[Path, int],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from bridgebench.store import Store
    from bridgebench.timing import report

    path, cid = larger_campaign
    store = Store(path, create=False)
    assert store.iteration_count(cid) == 4 * 2 * 5 * 2000
    monkeypatch.setattr(analysis, "analyse", _refuse)
    monkeypatch.setattr(analysis, "classify_execution", _refuse)
    monkeypatch.setattr(analysis, "summarise", _refuse)
    result = current_analysis(store, cid)
    for format_ in report.FORMATS:
        assert report.render(format_, result, Series(store))
    comparisons, _ = compare(store, cid, "cpython", cid, "lua/jit")  # only the ratio is resampled
    assert len(comparisons) == 4


def test_the_other_choice_about_disturbed_executions_analyses_again(
        larger_campaign: tuple[Path, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from bridgebench.store import Store

    path, cid = larger_campaign
    store = Store(path, create=False)
    calls = []
    real = analysis.analyse
    monkeypatch.setattr(analysis, "analyse", lambda *a, **k: calls.append(k) or real(*a, **k))
    assert current_analysis(store, cid, exclude_disturbed=True).audit.excluded
    assert calls == [{"exclude_disturbed": True, "seed": 0}]


def test_the_steady_mask_is_the_rule_the_estimates_use(tmp_path: Path) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=2, iterations=300)
    result = analyse(store, cid)
    series = Series(store)
    for cell in result.cells:
        for run in cell.per_execution:
            times = series.times(run)
            mask = run.steady_mask()
            assert not mask[list(run.outliers)].any()
            if run.steady_mean is not None:
                assert run.steady_mean == pytest.approx(float(np.mean(times[mask])), rel=1e-15)
            for seg in run.segments:
                kept = times[seg.start:seg.end][~run.outlier_mask()[seg.start:seg.end]]
                assert seg.mean == pytest.approx(float(np.mean(kept)), rel=1e-12)


def _second_machine(path: Path, slower: float) -> None:
    """Say that odd-numbered executions ran on machine m2, which was `slower` times slower."""
    with sqlite3.connect(path) as db:
        db.execute("UPDATE execution SET machine = 'm2' WHERE pexec % 2 = 1")
        for eid, data in db.execute("SELECT s.execution_id, s.data FROM series s JOIN execution e ON e.id ="
                                    " s.execution_id WHERE e.machine = 'm2' AND s.name = 'seconds'").fetchall():
            times = np.frombuffer(data, dtype="<f8") * slower
            db.execute("UPDATE series SET data = ? WHERE execution_id = ? AND name = 'seconds'",
                       (times.tobytes(), eid))
        db.execute("INSERT INTO machine VALUES ('m2', ?, 0)", (json.dumps({"cpu_model": "Other CPU"}),))


@pytest.mark.parametrize(("slower", "verdict"), [(1.0, "consistent"), (1.5, "distinguishable")])
def test_machines_are_told_apart_only_when_they_differ(tmp_path: Path, slower: float, verdict: str) -> None:
    from bridgebench.timing.report import markdown

    path = tmp_path / "s.sqlite"
    # 5 process executions a machine: one of m2's slows down in "n body" on lua/jit, and over 3 executions
    # the interval (Student's t over them) is rightly too wide to tell the machines apart there.
    store, cid = make_campaign(path, pexecs=10, iterations=200, crash=False)
    assert analyse(store, cid).machines == {}  # one machine: no machines section
    _second_machine(path, slower)
    result = analyse(store, cid)
    assert set(result.machines) == {"machine-1", "m2"} and result.machines["m2"]["cpu_model"] == "Other CPU"
    for cell in result.cells:
        assert [(m.machine, m.executions) for m in cell.machines] == [("m2", 5), ("machine-1", 5)]
        assert cell.machines_verdict == verdict, cell.machines_reason
    text = markdown.render(result)
    assert "## Machines" in text and f"| {verdict} |" in text and "Other CPU" in text


def _rounds(rounds: dict[int, str], rng: np.random.Generator) -> analysis.Rounds:
    return {r: analysis.Side(machine, rng.normal(1.0, 0.01, 30)) for r, machine in rounds.items()}


FIVE = {r: "m" for r in range(5)}


@pytest.mark.parametrize(("a", "b", "same_campaign", "paired"), [
    (FIVE, FIVE, True, True),
    # rounds only one side has stay out of a paired ratio; fewer than 5 shared rounds are not paired
    ({**FIVE, 5: "m", 6: "m"}, FIVE, True, True),
    ({**FIVE, 5: "m"}, {r: "m" for r in range(2, 6)}, True, False),
    (FIVE, FIVE, False, False),  # two campaigns: their rounds are not neighbours in time
    ({**FIVE, 4: "n"}, FIVE, True, False),  # a fleet's round ran on two machines
])
def test_a_ratio_is_paired_by_round_only_within_one_campaign_and_machine(
        a: dict[int, str], b: dict[int, str], same_campaign: bool, paired: bool) -> None:
    rng = np.random.default_rng(3)
    sa, sb = _rounds(a, rng), _rounds(b, rng)
    r = analysis.ratio_between(sa, sb, confidence=0.99, same_campaign=same_campaign)
    assert ("paired by round" in r.method) == paired
    if paired:  # over the shared rounds only: the geometric mean of their ratios
        shared = sorted(set(a) & set(b))
        logs = [np.log(sb[k][1].mean() / sa[k][1].mean()) for k in shared]
        assert r.value == pytest.approx(float(np.exp(np.mean(logs))))


def test_a_campaigns_report_says_how_its_ratios_were_computed(tmp_path: Path) -> None:
    from bridgebench.timing.report import tables

    store, cid = make_campaign(tmp_path / "s.sqlite", benchmarks=("fib", "n body"), pexecs=5, crash=False)
    assert "; ratios: paired by round: Student's t on the rounds' log ratios (2)" in \
        tables.budget_line(current_analysis(store, cid))
    store, cid = make_campaign(tmp_path / "t.sqlite", benchmarks=("fib", "n body"), pexecs=3, crash=False)
    assert "; ratios: Welch's t over process executions (log scale) (2)" in \
        tables.budget_line(current_analysis(store, cid))


def test_the_budget_line_says_how_each_cells_steady_state_was_found(tmp_path: Path) -> None:
    from dataclasses import replace

    from bridgebench.stats.summary import PLAIN_METHOD
    from bridgebench.timing.report import tables

    store, cid = make_campaign(tmp_path / "s.sqlite", crash=False)
    result = current_analysis(store, cid)
    line = tables.budget_line(result)
    assert "; steady state: by changepoints, segments within δ 1.0% the same (the default: this machine was not " \
           "calibrated); ratios:" in line
    # a campaign whose interpreters are too short for changepoints (lua-vms's default): each way, with its count
    short = replace(result, cells=tuple(replace(c, method=PLAIN_METHOD) if c.benchmark == "fib" and c.mechanism ==
                                        "cpython" else c for c in result.cells))
    assert ("; steady state: by changepoints, segments within δ 1.0% the same (the default: this machine was not "
            "calibrated) (3 cells) and not classified (too few iterations for changepoints): each execution's "
            "iterations after its first (1 cell); ratios:") in tables.budget_line(short)


def test_a_cell_with_fewer_than_three_process_executions_has_no_interval(tmp_path: Path) -> None:
    from bridgebench.report import fmt
    from bridgebench.timing.report import markdown, tables

    store, cid = make_campaign(tmp_path / "s.sqlite", benchmarks=("fib", "n body"), pexecs=2, crash=False)
    result = current_analysis(store, cid)
    for cell in result.cells:
        perf = cell.steady_performance
        assert perf is not None and (perf.low, perf.high, perf.executions) == (None, None, 2)
        assert cell.steady_bootstrap is not None and cell.steady_bootstrap.has_interval  # secondary, labelled
        if cell.mechanism != result.baseline:
            assert cell.ratio is not None and not cell.ratio.has_interval
            assert fmt.ratio(cell.ratio).endswith("(too few executions)")
    line = tables.few_executions_line(result)
    assert line is not None and line.startswith("4 of 4 cells have fewer than 3 process executions")
    text = markdown.render(result)
    assert f"> {line}" in text and "±" not in text.split("## Steady state")[1].split("##")[0]
    store, cid = make_campaign(tmp_path / "t.sqlite", benchmarks=("fib", "n body"), pexecs=3, crash=False)
    result = current_analysis(store, cid)
    assert tables.few_executions_line(result) is None
    assert all(c.steady_performance and c.steady_performance.has_interval for c in result.cells)


# --- per-execution classifications, made once ------------------------------------------------------------
def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the calls the analysis makes to classify an execution."""
    calls: list[int] = []
    real = analysis.classify_execution

    def counted(times: np.ndarray, **options: float) -> object:
        calls.append(len(times))
        return real(times, **options)

    monkeypatch.setattr(analysis, "classify_execution", counted)
    return calls


def test_an_execution_is_classified_once_and_read_back_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=3, crash=False)
    calls = _counting(monkeypatch)
    first = analyse(store, cid)
    assert len(calls) == 12  # 2 benchmarks × 2 mechanisms × 3 executions
    again = analyse(store, cid)
    assert len(calls) == 12 and again == first  # nothing classified again, the same result

    # One more execution (an adaptive round, a resumed campaign): only it is classified.
    task = store.planned(cid)[0]
    store.add_planned(cid, [type(task)(99, task.benchmark, task.mechanism, 3)])
    times = synthetic_series(np.random.default_rng(5), "flat", 300, 4e-3)
    store.record_execution(cid, store.planned(cid)[-1], Execution(
        OK, "", 0, "", ProbeOutput([float(x) for x in times], "42", 4, {}, {}), 1000, 0.0, 1.0))
    analyse(store, cid)
    assert len(calls) == 13


def test_classifications_are_made_again_under_other_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=3, crash=False)
    first = analyse(store, cid)
    calls = _counting(monkeypatch)
    monkeypatch.setattr(analysis, "RULES_VERSION", "a later rule")
    assert analyse(store, cid) == first and len(calls) == 12
    assert {r[0] for r in sqlite3.connect(tmp_path / "s.sqlite").execute("SELECT rules FROM execution_class")} \
        == {"a later rule"}


def test_a_store_written_before_classifications_were_kept_still_analyses(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store, cid = make_campaign(path, pexecs=3, crash=False)
    expected = analyse(store, cid)
    store.close()
    with sqlite3.connect(path) as db:  # as schema 5 left it
        db.execute("DROP TABLE execution_class")
        db.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
    reopened = Store(path, create=False)
    assert analyse(reopened, cid) == expected
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        assert db.execute("SELECT count(*) FROM execution_class").fetchone()[0] == 12


def test_an_estimate_is_never_printed_in_exponent_notation() -> None:
    from bridgebench.report import fmt
    from bridgebench.stats import Estimate
    assert fmt.estimate(Estimate(0.2109, 0.2, 0.22, 0.99, "test", 3)) == "210.9 ±11 ms"
    assert fmt.estimate(Estimate(0.2262, 0.1265, 0.3259, 0.99, "test", 3)) == "226.2 ±100 ms"  # 99.7, not "1e+02"
    assert fmt.estimate(Estimate(0.2, 0.19, 0.21, 0.99, "test", 3)) == "200 ±10 ms"
    assert fmt.estimate(Estimate(2.5e-8, 2.4e-8, 2.6e-8, 0.99, "test", 3)) == "25 ±1 ns"
    assert fmt.times(999.7) == "×1000" and fmt.times(0.00005123, 2) == "×0.000051" and fmt.times(150.2, 2) == "×150"


def test_an_interval_a_plus_minus_would_misstate_is_shown_by_its_ends() -> None:
    from bridgebench.report import fmt
    from bridgebench.stats import Estimate
    # Reaching past zero as a ± (a time cannot): "210.9 ±270 ms" would read -59 to 481.
    assert fmt.estimate(Estimate(0.2109, 0.05, 0.4809, 0.99, "test", 3)) == "210.9 ms (50–481)"
    # Log-scale intervals from three executions: a ± of the far side would put the near end 203, 235 and 82 ms
    # away from where it is (a reader takes "543.5 ±497 ms" for 46–1041).
    assert fmt.estimate(Estimate(0.5435, 0.294, 1.0412, 0.99, "test", 3)) == "543.5 ms (294–1041)"
    assert fmt.estimate(Estimate(0.4333, 0.227, 0.912, 0.99, "test", 3)) == "433.3 ms (227–912)"
    assert fmt.estimate(Estimate(0.01259, 0.0061, 0.0259, 0.99, "test", 3)) == "12.59 ms (6.1–25.9)"
    # Lopsided by less than a tenth of the value: the larger side as a ±, as before.
    assert fmt.estimate(Estimate(0.01178, 0.0114, 0.01234, 0.99, "test", 3)) == "11.78 ±0.56 ms"
    assert fmt.estimate(Estimate(0.1582, 0.1263, 0.198, 0.99, "test", 3)) == "158.2 ±40 ms"
    assert fmt.estimate(Estimate(1.0, 1.0, 1.0, 0.99, "test", 3)) == "1 ±0 s"  # a count that never moved
