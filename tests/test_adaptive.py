"""Adaptive budgets: the stopping rule on its own, and campaigns that stop early when their cells settle,
run on when they do not, never pass their caps, and resume where they were."""

from __future__ import annotations

import json
import math
import os
import random
import signal
from pathlib import Path

import pytest

from bridgebench import question
from bridgebench.campaign.adaptive import (
    CAPPED,
    FAILING,
    OPEN,
    OUT_OF_TIME,
    SETTLED,
    blocks,
    decide,
    decide_baseline,
    decide_ratio,
    half_width,
    looks,
    reopened,
    stopping_confidence,
)
from bridgebench.campaign.timing import LATER_MIN_ITERATIONS, later_parts
from bridgebench.options import look_points
from bridgebench.stats import Estimate
from bridgebench.store import Store
from bridgebench.study import StudyError, read_study
from bridgebench.timing.analysis import first_warmup
from tests.conftest import add_benchmark, bridgebench, gated_campaign, rows

PERF_1PCT = Estimate(1.0, 0.99, 1.01, 0.99, "test")
PERF_10PCT = Estimate(1.0, 0.9, 1.1, 0.99, "test")


@pytest.mark.parametrize(("executions", "cls", "perf", "before", "state"), [
    (3, "flat", PERF_1PCT, "flat", SETTLED),
    (3, "flat", PERF_10PCT, "flat", OPEN),  # CI too wide
    (3, "flat", PERF_1PCT, "warmup", OPEN),  # the last execution changed the class
    (3, "flat", PERF_1PCT, None, OPEN),  # one execution: nothing to say the class holds
    (10, "flat", PERF_10PCT, "flat", CAPPED),
    (10, "flat", PERF_1PCT, "flat", SETTLED),  # settling beats the cap
    (3, None, None, None, FAILING),  # its first executions all failed
    (1, None, None, None, OPEN),
    (4, "no steady state", None, "no steady state", OPEN),  # no steady state: no CI to settle on
])
def test_the_stopping_rule(executions: int, cls: str | None, perf: Estimate | None, before: str | None,
                           state: str) -> None:
    d = decide(executions, cls, perf, before, first=3, until_ci=0.02, cap=10)
    assert d.state == state, d
    assert d.reason


def decisions(db: Path) -> list[tuple]:
    return rows(db, "SELECT round, benchmark, mechanism, executions, state FROM cell_decision ORDER BY round, "
                    "mechanism")


def test_cells_that_settle_stop_after_their_first_executions(basic_study: Path, tmp_path: Path) -> None:
    add_benchmark(basic_study, "constant")  # the same times in every execution, whatever the machine does
    result = bridgebench("run", str(basic_study), "--benchmarks", "constant", "--until", "ci=99%",
                         "--max-executions", "6", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    # 2 first executions give no interval (too few process executions), so one more round, then no more.
    assert rows(db, "SELECT count(*) FROM execution")[0][0] == 6
    assert [d[4] for d in decisions(db)] == [OPEN, OPEN, SETTLED, SETTLED]
    assert "too few process executions" in rows(db, "SELECT reason FROM cell_decision WHERE round = 0")[0][0]
    report = json.loads(result.stdout)
    assert report["adaptive"]["states"] == {SETTLED: 2} and report["adaptive"]["rounds"] == 2
    md = bridgebench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert ("adaptive budget: 2 rounds judged, then 2 settled; 2 to at most 6 process executions a cell, at most "
            "3600 s of executions in all. Each cell ran until its 99% CI was within ±99.0% and its class held.") in md
    assert "Not settled" not in md


def test_cells_that_do_not_settle_run_on_to_their_cap(basic_study: Path, tmp_path: Path) -> None:
    result = bridgebench("run", str(basic_study), "--until", "ci=0.0001%", "--max-executions", "4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    per_cell = dict(rows(db, "SELECT mechanism, count(*) FROM execution GROUP BY mechanism"))
    assert per_cell == {"a": 4, "b": 4}  # never more than the cap
    states = decisions(db)
    assert [d[0] for d in states] == [0, 0, 1, 1, 2, 2]  # a round after the first executions, then one each
    assert [d[4] for d in states[-2:]] == [CAPPED, CAPPED]
    assert rows(db, "SELECT count(*) FROM planned")[0][0] == 8
    md = bridgebench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert "## Not settled by the adaptive budget" in md and "cap of 4 process executions reached" in md


def test_the_time_cap_is_never_passed(basic_study: Path, tmp_path: Path) -> None:
    """Each execution sleeps 0.3 s: executions start only while the time spent plus the cell's expected
    time fits the cap, and what did not run is dropped from the plan."""
    add_benchmark(basic_study, "sleepy")
    result = bridgebench("run", str(basic_study), "--benchmarks", "sleepy", "--until", "ci=0.0001%",
                         "--max-executions", "20", "--max-time", "1.5", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    walls = [w for (w,) in rows(db, "SELECT wall_s FROM execution ORDER BY seq")]
    assert 2 <= len(walls) < 40
    spent = 0.0
    for wall in walls:
        assert spent < 1.5  # no execution started once the cap was spent
        spent += wall
    assert rows(db, "SELECT count(*) FROM planned")[0][0] == len(walls)  # unrun executions dropped
    assert {d[4] for d in decisions(db) if d[0] == max(x[0] for x in decisions(db))} == {OUT_OF_TIME}
    assert rows(db, "SELECT state FROM campaign") == [("done",)]


def test_a_resume_reopens_what_stopped_out_of_time_and_the_baseline_its_ratios_need() -> None:
    state = {("x", "a"): OUT_OF_TIME, ("x", "base"): SETTLED, ("y", "a"): SETTLED, ("y", "base"): SETTLED,
             ("z", "a"): CAPPED, ("z", "base"): OUT_OF_TIME}
    assert reopened(state, "base") == {("x", "a"): OPEN, ("x", "base"): OPEN, ("y", "a"): SETTLED,
                                       ("y", "base"): SETTLED, ("z", "a"): CAPPED, ("z", "base"): OPEN}
    # by each cell's own CI (no baseline to keep open), only what stopped out of time
    assert reopened(state, None) == {**state, ("x", "a"): OPEN, ("z", "base"): OPEN}


def test_a_campaign_out_of_time_goes_on_when_resumed_with_more(basic_study: Path, tmp_path: Path) -> None:
    """Each execution sleeps 0.3 s: out of time at 1.5 s, then resumed with 4.5 s, the cells stopped out of time go
    on under the new cap (never passed either), and the report says the cap it had and how to give more. The 3 s
    more hold a further execution unless one takes ten times as long as it does here."""
    add_benchmark(basic_study, "sleepy")
    db = tmp_path / "results" / "bridgebench.sqlite"
    first = bridgebench("run", str(basic_study), "--benchmarks", "sleepy", "--until", "ci=0.0001%",
                        "--max-executions", "20", "--max-time", "1.5", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = rows(db, "SELECT count(*) FROM execution")[0][0]
    assert "--resume --max-time T`, T above 1.5 s, gives the 2 cells stopped out of time more" in bridgebench(
        "report", "--format", "markdown", cwd=tmp_path).stdout
    more = bridgebench("run", str(basic_study), "--resume", "--max-time", "4.5", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    walls = [w for (w,) in rows(db, "SELECT wall_s FROM execution ORDER BY seq")]
    assert len(walls) > before
    spent = 0.0
    for wall in walls:
        assert spent < 4.5  # no execution started once the raised cap was spent
        spent += wall
    assert sorted(s for (s,) in rows(db, "SELECT seq FROM execution")) == list(range(len(walls)))  # none twice
    last = max(d[0] for d in decisions(db))
    assert {d[4] for d in decisions(db) if d[0] == last} == {OUT_OF_TIME}
    assert rows(db, "SELECT state FROM campaign") == [("done",)]
    stored = json.loads(rows(db, "SELECT config_json FROM campaign")[0][0])["options"]
    assert (stored["max_time_s"], stored["earlier_max_time_s"]) == (4.5, [1.5])
    md = bridgebench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert ("at most 4.5 s of executions in all (1.5 s until resumed with more time: `run --resume --max-time`). "
            "`bridgebench run basic --resume --max-time T`, T above 4.5 s, gives the 2 cells") in md


def test_an_interrupted_adaptive_campaign_resumes_where_it_was(basic_study: Path, tmp_path: Path) -> None:
    db = tmp_path / "results" / "bridgebench.sqlite"
    proc, env = gated_campaign(basic_study, tmp_path, after=5, extra=("--until", "ci=0.0001%",
                                                                      "--max-executions", "4"))
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert rows(db, "SELECT count(*) FROM execution")[0][0] == 5  # the first round (4) and one of the next
    (tmp_path / "gate").touch()
    result = bridgebench("run", str(basic_study), "--resume", cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert dict(rows(db, "SELECT mechanism, count(*) FROM execution GROUP BY mechanism")) == {"a": 4, "b": 4}
    assert sorted(r[0] for r in rows(db, "SELECT seq FROM execution")) == list(range(8))
    assert [d[0] for d in decisions(db)] == [0, 0, 1, 1, 2, 2]


def test_a_study_budget_can_be_adaptive_and_must_say_all_of_it(tmp_path: Path, basic_study: Path) -> None:
    text = basic_study.read_text().replace("timeout_s = 20", "timeout_s = 20\nuntil_ci = 0.5\n"
                                           "max_process_executions = 3\nmax_time_s = 60")
    basic_study.write_text(text)
    assert read_study(basic_study).budgets["default"].until_ci == 0.5
    result = bridgebench("run", str(basic_study), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["adaptive"]["max_process_executions"] == 3
    basic_study.write_text(text.replace("max_time_s = 60", ""))
    with pytest.raises(StudyError, match="an adaptive budget also needs max_time_s"):
        read_study(basic_study)
    # the keys that shape a budget aimed at the question need one, and sensible values
    for extra, fragment in (("look_growth = 1.5", "look_growth needs a budget aimed at the question"),
                            ("decided_within = 0.05", "decided_within needs a budget aimed at the question"),
                            ("until_decided = true\nlook_growth = 0.5", "look_growth: expected a number from 1 to 4"),
                            ("until_decided = true\ndecided_within = 5", "decided_within: expected a fraction")):
        basic_study.write_text(text.replace("max_time_s = 60", f"max_time_s = 60\n{extra}"))
        with pytest.raises(StudyError, match=fragment):
            read_study(basic_study)
    basic_study.write_text(text.replace("until_ci = 0.5\nmax_process_executions = 3\nmax_time_s = 60",
                                        "later_share = 0.4"))
    with pytest.raises(StudyError, match="later_share needs an adaptive budget"):
        read_study(basic_study)


@pytest.mark.parametrize(("args", "fragment"), [
    (["--until", "ci=lots"], "expected ci=SHARE"),
    (["--until", "ci=150%"], "expected a share above 0 and below 1"),
    (["--until", "ci=2%", "--max-executions", "1"], "expected at least the 2 process executions"),
    (["--until", "ci=2%", "--max-time", "soon"], "expected seconds"),
])
def test_bad_adaptive_options_are_one_line_errors(basic_study: Path, tmp_path: Path, args: list[str],
                                                  fragment: str) -> None:
    result = bridgebench("run", str(basic_study), *args, cwd=tmp_path)
    assert result.returncode == 2
    assert fragment in result.stderr.strip().splitlines()[-1]


# --- aimed at the study's question: a cell settles when its ratio to the baseline is decided ---------------
SLOWER = question.Answer(question.SLOWER, "the interval 1.9–2.1 lies above 1")
UNDECIDED = question.Answer(question.UNDECIDED, "the interval 0.8–1.3 holds 1 and reaches beyond ±2%")


@pytest.mark.parametrize(("executions", "cls", "answer", "state"), [
    (3, "flat", SLOWER, SETTLED),
    (3, "flat", question.Answer(question.EQUIVALENT, "within ±2%"), SETTLED),
    (3, "flat", UNDECIDED, OPEN),
    (8, "flat", UNDECIDED, CAPPED),
    (8, "flat", SLOWER, SETTLED),  # deciding beats the cap
    (2, "flat", SLOWER, OPEN),  # not yet its first executions
    (3, None, UNDECIDED, FAILING),
    (1, None, UNDECIDED, OPEN),
])
def test_the_rule_aimed_at_the_question(executions: int, cls: str | None, answer: question.Answer,
                                        state: str) -> None:
    d = decide_ratio(executions, cls, answer, first=3, cap=8)
    assert d.state == state, d
    assert d.reason


@pytest.mark.parametrize(("others", "state"), [
    ([SETTLED, SETTLED], SETTLED),
    ([SETTLED, CAPPED, OUT_OF_TIME], SETTLED),
    ([SETTLED, OPEN], OPEN),
])
def test_the_baseline_stays_open_while_a_ratio_of_its_benchmark_is(others: list[str], state: str) -> None:
    assert decide_baseline(4, "flat", others, first=3, cap=8).state == state
    assert decide_baseline(8, "flat", [OPEN], first=3, cap=8).state == CAPPED
    assert decide_baseline(2, "flat", [SETTLED], first=3, cap=8).state == OPEN


def test_the_looks_correction_bounds_the_false_decisions() -> None:
    # A cell is judged after its first executions and after each round up to its cap: each look at
    # 1 - 0.01/looks keeps the chance of any false "different" over all of them at most 1 % (Bonferroni).
    assert looks(first=3, cap=10) == 8 and looks(first=5, cap=5) == 1
    assert stopping_confidence(first=3, cap=12) == pytest.approx(0.999)
    # Judged at look points that grow by half, plus the one count the time cap may stop a cell at: 5 looks
    # to a cap of 12 instead of 10, 9 to a cap of 60 instead of 58.
    assert look_points(3, 12, 1.5) == (3, 5, 8, 12) and looks(3, 12, 1.5) == 5
    assert look_points(3, 60, 1.5) == (3, 5, 8, 12, 18, 27, 41, 60) and looks(3, 60, 1.5) == 9
    assert look_points(3, 6, 1.5) == (3, 5, 6)  # the cap is always a look
    assert look_points(3, 6) == (3, 4, 5, 6) and looks(5, 5, 1.5) == 1
    assert stopping_confidence(3, 12, 1.5) == pytest.approx(0.998)


@pytest.mark.parametrize(("executions", "answer", "width", "next_look", "state", "said"), [
    (4, SLOWER, 0.01, 5, OPEN, "judged next at 5"),  # between looks a ratio is not judged, decided or not
    (5, SLOWER, 0.01, None, SETTLED, "decided, slower"),
    (5, SLOWER, 0.30, None, OPEN, "(±30.0%) is not yet within ±5.0%"),  # decided, but its interval spans ±30 %
    (8, SLOWER, 0.30, None, CAPPED, "not yet within ±5.0%"),
    (5, question.Answer(question.EQUIVALENT, "within ±2%"), 0.3, None, SETTLED, "equivalent"),
    (5, SLOWER, None, None, OPEN, "not yet within"),  # no interval: not within anything
])
def test_the_rule_judges_at_its_looks_and_waits_for_a_narrow_interval(
        executions: int, answer: question.Answer, width: float | None, next_look: int | None, state: str,
        said: str) -> None:
    d = decide_ratio(executions, "flat", answer, first=3, cap=8, next_look=next_look, within=0.05,
                     ratio_width=width)
    assert d.state == state, d
    assert said in d.reason, d


def test_a_half_width_is_the_farther_end_so_within_5_percent_means_both_ends() -> None:
    # a log-scale ratio interval exp(m ± h) with h = 0.0495: its ends 5.07 % above and 4.83 % below the estimate
    h = 0.0495
    ratio = Estimate(1.0, math.exp(-h), math.exp(h), 0.99, "test", 40)
    assert half_width(ratio) == pytest.approx(math.expm1(h))  # the upper end, not the two sides' mean (4.95 %)
    d = decide_ratio(41, "flat", SLOWER, first=3, cap=300, within=0.05, ratio_width=half_width(ratio))
    assert d.state == OPEN and "(±5.1%) is not yet within ±5.0%" in d.reason, d
    assert half_width(Estimate(2.0, 1.9, 2.3, 0.99, "test", 5)) == pytest.approx(0.15)  # asymmetric: the far side
    assert half_width(Estimate(2.0, None, None, 0.99, "test", 2)) is None


def test_a_budget_aimed_at_the_question_spends_its_rounds_on_undecided_ratios(basic_study: Path,
                                                                              tmp_path: Path) -> None:
    add_benchmark(basic_study, "twice")  # b takes twice a's time: decided after the first executions
    add_benchmark(basic_study, "seesaw")  # equal means, executions far apart: never decided in a few
    add_benchmark(basic_study, "stepped")  # each cell's CI wide, the ratio 2 in every round: decided when paired
    result = bridgebench("run", str(basic_study), "--benchmarks", "twice,seesaw,stepped", "-p", "3", "--until",
                         "decided",
                         "--max-executions", "6", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    per_cell = dict(((b, m), n) for b, m, n in rows(db, "SELECT benchmark, mechanism, count(*) FROM execution "
                                                        "GROUP BY benchmark, mechanism"))
    # stepped: by its own CI a cell would run to the cap; its ratio is decided once 5 rounds pair (methodology)
    assert per_cell == {("twice", "a"): 3, ("twice", "b"): 3, ("seesaw", "a"): 6, ("seesaw", "b"): 6,
                        ("stepped", "a"): 5, ("stepped", "b"): 5}
    final = {(b, m): (s, r) for _, b, m, _, s, r in rows(
        db, "SELECT round, benchmark, mechanism, executions, state, reason FROM cell_decision ORDER BY round")}
    assert final["twice", "b"][0] == SETTLED and "decided, slower" in final["twice", "b"][1]
    assert final["twice", "a"][0] == SETTLED and "every ratio of its benchmark has stopped" in final["twice", "a"][1]
    assert final["seesaw", "b"][0] == CAPPED and "undecided" in final["seesaw", "b"][1]
    assert final["seesaw", "a"][0] == SETTLED  # its only ratio stopped (capped) with it
    report = json.loads(result.stdout)
    assert final["stepped", "b"][0] == SETTLED and "decided, slower" in final["stepped", "b"][1]
    assert report["adaptive"]["states"] == {SETTLED: 5, CAPPED: 1}
    # The report's intervals are the ones the budget judged: computed at 1 - 0.01/4 (first 3, cap 6: 4 looks),
    # so they hold at 99 % at whichever look stopped them, and the report's answers are the budget's.
    assert report["confidence"] == 0.99 and report["looks"] == 4
    ratios = {c["benchmark"]: c["ratio"] for c in report["cells"] if c["mechanism"] == "b"}
    assert [r["confidence"] for r in ratios.values()] == pytest.approx([0.9975] * 3)
    said = {b: question.answer(Estimate(**r), 0.02).state for b, r in ratios.items()}
    assert said == {"twice": question.SLOWER, "stepped": question.SLOWER, "seesaw": question.UNDECIDED}


def test_until_decided_needs_a_baseline(basic_study: Path, tmp_path: Path) -> None:
    text = basic_study.read_text().replace('baseline = "a"\n', "")
    basic_study.write_text(text)
    done = bridgebench("run", str(basic_study), "--until", "decided", cwd=tmp_path)
    assert done.returncode == 2 and "names no baseline, so there is no ratio to decide" in done.stderr


def test_a_round_runs_in_blocks_one_a_benchmark_each_in_a_drawn_order() -> None:
    cells = [(b, m) for m in ("m1", "m2", "m3") for b in ("x", "y", "z")]  # the benchmarks interleaved
    cost = {"x": 3.0, "y": 1.0, "z": 2.0}
    orders = set()
    for seed in range(40):
        got = blocks(list(cells), lambda c: cost[c[0]], random.Random(seed), shuffle_blocks=False)
        assert [b for b, _ in got] == ["y"] * 3 + ["z"] * 3 + ["x"] * 3  # contiguous, cheapest block first
        assert all(sorted(m for b, m in got if b == bench) == ["m1", "m2", "m3"] for bench in cost)
        orders.add(tuple(got))
        assert blocks(list(cells), lambda c: cost[c[0]], random.Random(seed), shuffle_blocks=False) == got
    assert len(orders) > 20  # each block's order is drawn: 6^3 ways
    shuffled = {tuple(b for b, _ in blocks(list(cells), lambda c: cost[c[0]], random.Random(s), True)[::3])
                for s in range(40)}
    assert len(shuffled) > 1  # with randomise the blocks' order is drawn too


def test_the_budget_stops_an_aa_ratio_as_different_at_most_one_percent_of_the_time() -> None:
    # evidence/sequential.py, small: A/A pairs run through the budget's looks from 3 to 12 executions, their
    # executions spread by 1 % (where judging every look at 99 % would stop 3.7 % of them as different), and
    # by 3 % with a 1.3x slow mode 10 % of the time (LuaJIT's, as measured); and, judged at look points growing
    # by half to a cap of 60 and run on until decided within ±5 % (lua-vms's default), spread by 2.5 %.
    # Bonferroni bounds the rate of a wrong "faster" or "slower" stop by 1 %; allow 3.3 binomial sd above it.
    from evidence import sequential

    def bound(pairs: int) -> float:
        return pairs * 0.01 + 3.3 * (pairs * 0.01 * 0.99) ** 0.5

    for pairs, sd, modes, cap, growth, within in ((1500, 0.01, 0.0, 12, 1.0, None), (1500, 0.03, 0.1, 12, 1.0, None),
                                                  (600, 0.025, 0.0, 60, 1.5, 0.05)):
        states, excluded, _, missed = sequential.simulate(pairs, 1.0, 3, cap, sd, modes, 1.3, 7, growth, within)
        wrong = states[question.FASTER] + states[question.SLOWER]
        assert wrong <= bound(pairs), (sd, states)
        assert excluded <= bound(pairs) and missed <= bound(pairs), (sd, excluded, missed)
    # and a planted 10 % difference is stopped as slower (never faster) in a good share of the pairs; judged at
    # look points, a planted 2 % is covered by the report's interval as often as its confidence says
    states, _, _, _ = sequential.simulate(300, 1.10, 3, 12, 0.03, 0.1, 1.3, seed=8)
    assert states[question.SLOWER] > 50 and states[question.FASTER] <= 3, states
    states, _, _, missed = sequential.simulate(600, 1.02, 3, 60, 0.025, 0.0, 1.3, 9, 1.5, 0.05)
    assert missed <= bound(600) and states[question.FASTER] + states[question.EQUIVALENT] <= 3, states


def test_a_budget_with_look_points_judges_there_and_shortens_the_later_executions(basic_study: Path,
                                                                                  tmp_path: Path) -> None:
    add_benchmark(basic_study, "seesaw")  # never decided in a few executions: it runs to its cap
    text = basic_study.read_text().replace(
        "[budget]\nprocess_executions = 2\niterations = 4\n",
        "[budget]\nprocess_executions = 3\niterations = 10\nuntil_ci = 0.02\nmax_process_executions = 8\n"
        "max_time_s = 600\nuntil_decided = true\nlook_growth = 1.5\ndecided_within = 0.05\nlater_share = 0.5\n")
    text = text.replace('env = { PROBE_MECHANISM = "b" }', 'env = { PROBE_MECHANISM = "b" }\nmin_iterations = 8')
    basic_study.write_text(text)
    result = bridgebench("run", str(basic_study), "--benchmarks", "seesaw", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "results" / "bridgebench.sqlite"
    reasons = {n: r for n, r in rows(db, "SELECT executions, reason FROM cell_decision WHERE mechanism = 'b'")}
    # a round takes a benchmark to its next look: judged at 3, 5 and 8, nowhere between
    assert sorted(reasons) == [3, 5, 8]
    assert all("undecided" in reasons[n] and "judged next" not in reasons[n] for n in (3, 5)), reasons
    assert "cap of 8" in reasons[8]
    # The first three executions of a cell make its 10 iterations; the later ones half of them, but never
    # fewer than their mechanism's own floor (b's 8, as a JIT's 50 keeps its executions classified).
    made = rows(db, "SELECT DISTINCT mechanism, pexec, length(data) / 8 FROM execution e JOIN series s "
                    "ON s.execution_id = e.id WHERE s.name = 'seconds' ORDER BY mechanism, pexec")
    assert made == [("a", p, 10 if p < 3 else 5) for p in range(8)] + [("b", p, 10 if p < 3 else 8) for p in range(8)]
    report = json.loads(result.stdout)
    assert report["looks"] == 4  # 3, 5, 8 and the one a time cap could add
    md = bridgebench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert "judged at 3, 5, 8 process executions" in md and "or faster or slower with its interval within ±5%" in md
    assert [r["confidence"] for r in (c["ratio"] for c in report["cells"] if c["mechanism"] == "b")] == \
        pytest.approx([0.9975])


def _warms_campaign(basic_study: Path, tmp_path: Path, later: str) -> dict:
    """The JSON report of an adaptive campaign of 5 executions a cell of 60 iterations on `warms` (four warm-up
    iterations at 3 ms, then 1, 1.3 or 0.7 ms by execution), its later executions shortened by `later`."""
    add_benchmark(basic_study, "warms")
    basic_study.write_text(basic_study.read_text().replace(
        "[budget]\nprocess_executions = 2\niterations = 4\n",
        "[budget]\nprocess_executions = 3\niterations = 60\nuntil_ci = 0.0001\nmax_process_executions = 5\n"
        f"max_time_s = 600\n{later}\n"))
    result = bridgebench("run", str(basic_study), "--benchmarks", "warms", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_shortened_executions_start_after_the_warm_up_their_cells_long_ones_showed(basic_study: Path,
                                                                                   tmp_path: Path) -> None:
    cell = next(c for c in _warms_campaign(basic_study, tmp_path, "later_share = 0.5")["cells"]
                if c["mechanism"] == "a")
    runs = {r["pexec"]: r for r in cell["per_execution"]}
    assert [runs[p]["iterations"] for p in range(5)] == [60, 60, 60, 30, 30]
    # the long ones are classified (warm-up, steady from iteration 5) and give the cell its class...
    assert cell["classification"] == "warmup" and cell["class_counts"]["warmup"] == 3
    assert all(runs[p]["kind"] == "warmup" and runs[p]["steady_iteration"] == 5 for p in range(3))
    # ...the short ones are not, and count from the fifth iteration on, so their means are the steady 1 ms
    for p in (3, 4):
        assert runs[p]["kind"] is None and runs[p]["steady_ranges"] == [[4, 30]], runs[p]
        level = runs[p]["steady_mean"] / 0.001  # with the warm-up in it would be above 1.3 × 1.2
        assert any(level == pytest.approx(step, rel=0.01) for step in (1.0, 1.3, 0.7)), runs[p]


def test_later_executions_sized_to_the_warm_up_and_a_few_steady_iterations(basic_study: Path,
                                                                             tmp_path: Path) -> None:
    for cell in _warms_campaign(basic_study, tmp_path, "later_steady = 6")["cells"]:
        runs = {r["pexec"]: r for r in cell["per_execution"]}
        # the first three make the cell's 60 and are classified: four warm-up iterations; the later ones
        # make those four and 6 more, and count from the fifth, so their means are the steady 1 ms
        assert [runs[p]["iterations"] for p in range(5)] == [60, 60, 60, 10, 10], cell["mechanism"]
        assert all(runs[p]["steady_iteration"] == 5 for p in range(3))
        for p in (3, 4):
            assert runs[p]["kind"] is None and runs[p]["steady_ranges"] == [[4, 10]], runs[p]
            level = runs[p]["steady_mean"] / 0.001
            assert any(level == pytest.approx(step, rel=0.01) for step in (1.0, 1.3, 0.7)), runs[p]
    md = bridgebench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert "a classified cell's later ones its benchmark's warm-up and 6 more: 10 iterations" in md
    # Unknown warm-up (nothing classified, or nothing that reached a steady state by warming up), or a cell
    # too short to classify: the cell's own iterations; known, never more than them, nor fewer than a mean needs.
    # As (lead, steady): the lead is what is known not to be steady.
    assert later_parts(10, None, 6) == (0, 10)
    assert later_parts(60, 4, 6) == (4, 6) and later_parts(60, 58, 6) == (58, 2)
    assert later_parts(60, 0, 1) == (0, LATER_MIN_ITERATIONS)
    # Too short to classify: its first iteration (never counted) and as long as 6 of the classified cells'
    # iterations, at least 2; all of its own when that is not fewer, or when the seconds are not known.
    assert later_parts(44, 4, 6, own_s=0.02, classified_s=0.01) == (1, 3)
    assert later_parts(44, 4, 6, own_s=0.5, classified_s=0.01) == (1, 2)
    assert later_parts(7, 4, 6, own_s=0.01, classified_s=0.01) == (0, 7)
    assert later_parts(44, 4, 6) == (0, 44) and later_parts(44, None, 6, 0.5, 0.01) == (0, 44)


def test_a_resumed_campaign_sizes_its_later_executions_as_before(basic_study: Path, tmp_path: Path) -> None:
    # later_steady is read from the stored first executions, so a resumed campaign (a new harness) makes the
    # later ones exactly as long as the interrupted one did
    basic_study.write_text(basic_study.read_text().replace(
        "[budget]\nprocess_executions = 2\niterations = 4\n",
        "[budget]\nprocess_executions = 2\niterations = 60\nuntil_ci = 0.0001\nmax_process_executions = 5\n"
        "max_time_s = 600\nlater_steady = 6\n"))
    db = tmp_path / "results" / "bridgebench.sqlite"
    proc, env = gated_campaign(basic_study, tmp_path, after=7, extra=("-i", "60"))  # mid-round, as above
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    (tmp_path / "gate").touch()
    result = bridgebench("run", str(basic_study), "--resume", cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    made = rows(db, "SELECT e.mechanism, e.pexec, length(s.data) / 8 FROM execution e JOIN series s "
                    "ON s.execution_id = e.id WHERE s.name = 'seconds'")
    assert sorted((m, p) for m, p, _ in made) == [(m, p) for m in ("a", "b") for p in range(5)]
    later = sum(later_parts(60, first_warmup(Store(db, create=False), 1, "gate", 2), 6))
    assert {n for _, p, n in made if p < 2} == {60}
    assert {n for _, p, n in made if p >= 2} == {later}, made  # before the interruption and after it


def test_later_steady_and_turn_s_are_checked_in_the_study_file(basic_study: Path) -> None:
    text = basic_study.read_text()
    adaptive = "until_ci = 0.02\nmax_process_executions = 5\nmax_time_s = 60\n"
    for extra, fragment in (("later_steady = 6", "later_steady needs an adaptive budget"),
                            (adaptive + "later_steady = 0", "later_steady: expected"),
                            (adaptive + "later_steady = 6\nlater_share = 0.5", "give later_share or later_steady"),
                            ("turn_s = 0.05", "turn_s needs an adaptive budget"),  # it sizes the later blocks
                            (adaptive + "turn_s = -0.05", "turn_s: expected")):
        basic_study.write_text(text.replace("[budget]\n", f"[budget]\n{extra}\n"))
        with pytest.raises(StudyError, match=fragment):
            read_study(basic_study)
    # turn_s = 0: the later turns by iterations, over a turn_s the budget would inherit (based_on)
    basic_study.write_text(text.replace("[budget]\n", f"[budget]\n{adaptive}turn_s = 0.05\n")
                           + '\n[budget.by-iterations]\nbased_on = "default"\nturn_s = 0\n')
    budgets = read_study(basic_study).budgets
    assert budgets["default"].turn_s == 0.05 and budgets["by-iterations"].turn_s is None


def test_the_blocks_an_undecided_ratio_would_take() -> None:
    # question.blocks_to_decide (evidence/blocks_needed.py): the fewest blocks whose interval, at the same
    # estimate and spread, decides it
    from scipy import stats

    blocks_needed = question.blocks_to_decide
    target, n = blocks_needed(1.0, 0.03, 0.99, 0.02)
    assert target == question.EQUIVALENT and n is not None
    assert stats.t.ppf(0.995, n - 1) * 0.03 / n ** 0.5 < 0.0198 <= stats.t.ppf(0.995, n - 2) * 0.03 / (n - 1) ** 0.5
    assert blocks_needed(1.10, 0.01, 0.99, 0.02) == (question.SLOWER, 3)  # far from 1 and tight: at once
    assert blocks_needed(0.95, 0.03, 0.99, 0.02)[0] == question.FASTER
    assert blocks_needed(1.0, 0.0, 0.99, 0.02) == (question.EQUIVALENT, 3)
    # halfway to the margin's edge, either answer is as far: it takes the most blocks of all nearby estimates
    edge = math.exp(math.log1p(0.02) / 2)
    assert blocks_needed(edge, 0.03, 0.99, 0.02)[1] > max(blocks_needed(r, 0.03, 0.99, 0.02)[1] for r in (1.0, 1.03))


def test_a_round_takes_each_benchmark_to_its_next_look_and_never_past_the_cap() -> None:
    from bridgebench.campaign.adaptive import blocks_ahead
    from bridgebench.options import AdaptiveBudget

    budget = AdaptiveBudget(3, 0.02, 10, 600.0, False, 0, until_decided=True, growth=1.5)  # looks: 3, 5, 8, 10
    counts = {("x", "a"): 3, ("x", "b"): 3, ("y", "a"): 5, ("y", "b"): 5, ("z", "a"): 8, ("w", "a"): 6}
    assert blocks_ahead(list(counts), counts, budget) == {"x": 2, "y": 3, "z": 2, "w": 2}
    every_round = AdaptiveBudget(3, 0.02, 10, 600.0, False, 0, until_decided=True)
    assert blocks_ahead(list(counts), counts, every_round) == {"x": 1, "y": 1, "z": 1, "w": 1}


@pytest.mark.parametrize("repetition", range(3))
def test_an_interrupt_at_a_rounds_end_exits_130_with_its_line(basic_study: Path, tmp_path: Path,
                                                              repetition: int) -> None:
    # The analysis between rounds imports scipy; an interrupt inside that import used to end the process by
    # SIGINT after its clean exit (-2, 6 times in 10) or break the import (exit 1); three tries see it.
    basic_study.write_text(basic_study.read_text().replace(
        "[budget]\nprocess_executions = 2\niterations = 4\n",
        "[budget]\nprocess_executions = 2\niterations = 60\nuntil_ci = 0.0001\nmax_process_executions = 5\n"
        "max_time_s = 600\nlater_steady = 6\n"))
    proc, _ = gated_campaign(basic_study, tmp_path, after=6, extra=("-i", "60"))  # a round's end
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, stderr[-400:])
    assert "continue with `bridgebench run" in stderr
