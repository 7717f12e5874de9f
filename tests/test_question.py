"""The study's question: each ratio's answer (decided, equivalent or undecided) as a pure function, the line
that says it in words, and the study file's `headline` and `equivalence`."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridgebench.question import EQUIVALENT, FASTER, SLOWER, UNDECIDED, Answer, answer, summary
from bridgebench.stats import Estimate
from bridgebench.study import StudyError, read_study


def ratio(low: float | None, high: float | None, value: float = 1.0, executions: int = 5) -> Estimate:
    return Estimate(value, low, high, 0.99, "t", executions)


@pytest.mark.parametrize(("low", "high", "state"), [
    (0.90, 0.97, FASTER),  # B takes less time than A: the interval lies below 1
    (1.03, 1.10, SLOWER),
    (1.005, 1.015, SLOWER),  # a real difference, however small, is a difference
    (0.99, 1.015, EQUIVALENT),  # holds 1, and lies within ±2%
    (0.98, 1.02, EQUIVALENT),  # the margin's own ends count as within it
    (0.97, 1.01, UNDECIDED),  # holds 1 but reaches beyond the margin
    (None, None, UNDECIDED),  # no interval: too few process executions
])
def test_each_ratio_is_answered_by_the_rule(low: float | None, high: float | None, state: str) -> None:
    got = answer(ratio(low, high, executions=2 if low is None else 5), 0.02)
    assert got.state == state
    if low is None:
        assert "too few process executions" in got.why and "2 of the 3" in got.why
    assert answer(None, 0.02) == Answer(UNDECIDED, "no ratio: a side has no steady state")
    assert answer(ratio(0.97, 1.01), 0.05).state == EQUIVALENT  # a wider margin decides more


def test_the_summary_counts_each_answer_and_names_the_undecided() -> None:
    answers = [("fib", Answer(FASTER, "")), ("md5", Answer(FASTER, "")), ("life", Answer(EQUIVALENT, "")),
               ("havlak", Answer(UNDECIDED, "")), ("ray", Answer(SLOWER, ""))]
    assert summary("luajit2", "LuaJIT", answers, 0.02, 0.99) == (
        "luajit2 vs LuaJIT, 5 benchmarks: faster on 2, slower on 1, equivalent within 2% on 1, undecided on 1 "
        "(havlak) (99%)")
    assert summary("a", "b", [("x", Answer(EQUIVALENT, ""))], 0.05, 0.99) == (
        "a vs b, 1 benchmark: equivalent within 5% on 1 (99%)")
    # with the ratios, the words carry how much: the one ratio, or the range
    sizes = {"fib": 0.0512, "md5": 0.81, "life": 1.004, "havlak": 1.3, "ray": 38.2}
    assert summary("luajit2", "LuaJIT", answers, 0.02, 0.99, sizes) == (
        "luajit2 vs LuaJIT, 5 benchmarks: faster on 2: ×0.051–×0.81, slower on 1: ×38, equivalent within 2% on 1, "
        "undecided on 1 (havlak) (99%)")
    # near 1 a decided ratio keeps two digits of its distance from 1 (2026-11-26: "slower on 1: ×1" for 1.03;
    # 2026-11-28: "×1.1" for 1.0516, "×0.99" for 0.995)
    near = {"fib": 0.9996, "md5": 0.995, "ray": 1.0302}
    assert summary("luajit2", "LuaJIT", answers, 0.02, 0.99, near) == (
        "luajit2 vs LuaJIT, 5 benchmarks: faster on 2: ×0.995–×0.9996, slower on 1: ×1.03, equivalent within 2% "
        "on 1, undecided on 1 (havlak) (99%)")
    shown = {"fib": 0.5, "md5": 0.81, "ray": 1.0516, "life": 1.0, "havlak": 1.97}
    slower = [(b, Answer(SLOWER, "")) for b in ("ray", "havlak")]
    faster = [(b, Answer(FASTER, "")) for b in ("fib", "md5")]
    assert summary("a", "b", slower + faster, 0.02, 0.99, shown) == (
        "a vs b, 4 benchmarks: faster on 2: ×0.5–×0.81, slower on 2: ×1.052–×1.97 (99%)")
    # far from 1, never in exponent notation (an RPC call against a native one, the other way round)
    tiny = {"fib": 0.0000152, "md5": 0.00098}
    assert summary("a", "b", faster, 0.02, 0.99, tiny) == "a vs b, 2 benchmarks: faster on 2: ×0.000015–×0.00098 (99%)"


def test_the_headline_names_a_mechanism_other_than_the_baseline(basic_study: Path) -> None:
    text = basic_study.read_text()
    basic_study.write_text(text.replace('baseline = "a"', 'baseline = "a"\nheadline = "b"\nequivalence = 0.05'))
    study = read_study(basic_study)
    assert study.raw["study"]["headline"] == "b" and study.raw["study"]["equivalence"] == 0.05
    for bad, message in (('headline = "a"', "expected a mechanism other than the baseline"),
                         ('headline = "zz"', "expected a mechanism other than the baseline"),
                         ("equivalence = 2", "expected a fraction above 0 and below 1")):
        basic_study.write_text(text.replace('baseline = "a"', f'baseline = "a"\n{bad}'))
        with pytest.raises(StudyError, match=message):
            read_study(basic_study)


def test_the_power_count_keeps_each_benchmarks_answers_and_adds_them_up() -> None:
    from evidence.coverage import Count  # evidence/coverage.py --by-benchmark: power differs by benchmark

    first, second = Count(), Count()
    first.add(ratio(1.01, 1.05, 1.03), 1.02, False, "nbody", "plus2 over luajit in campaign 1", 0.02)
    first.add(ratio(0.95, 1.08, 1.01), 1.02, False, "richards", "plus2 over luajit in campaign 1",
              0.02)
    second.add(ratio(1.005, 1.04, 1.02), 1.02, True, "nbody", "plus2 over luajit in campaign 2", 0.02)
    first.merge(second)
    assert first.by_benchmark == {"nbody": {SLOWER: 2}, "richards": {UNDECIDED: 1}}
    assert first.answers == {SLOWER: 2, UNDECIDED: 1} and first.all == 3 and first.disturbed == 1
    assert first.missed == 0 and len(first.widths) == 3


def test_two_stores_answers_are_paired_by_seed_and_benchmark_and_their_discordant_pairs_tested() -> None:
    """evidence/coverage.py --versus: a comparison counts only where both stores have its seed and benchmark; only the
    pairs that one way found and the other did not weigh, tested at 1/2 (exact McNemar)."""
    from evidence.coverage import Count, versus

    found, missed = ratio(1.01, 1.05, 1.03), ratio(0.95, 1.08, 1.01)
    first, second = Count(), Count()
    for seed in range(6):  # the first finds every one, the second none
        first.add(found, 1.02, False, "nbody", "", 0.02, seed=seed)
        second.add(missed, 1.02, False, "nbody", "", 0.02, seed=seed)
    first.add(found, 1.02, False, "md5", "", 0.02, seed=0)  # no partner in the second: not paired
    second.add(found, 1.02, False, "fasta", "", 0.02, seed=0)
    first.add(found, 1.02, False, "fasta", "", 0.02, seed=0)  # both found it: not discordant
    assert versus(first, second, 1.02) == ("7 comparisons paired; slower in the first only: 6, in the second only: "
                                           "0; exact McNemar test p = 0.031")
    assert versus(second, first, 1.02).endswith("in the first only: 0, in the second only: 6; exact McNemar test "
                                                "p = 0.031")
    aa = versus(first, second, 1.0)  # A/A: any claim counts, faster or slower
    assert "faster or slower in the first only: 6" in aa


def test_what_diff_said_is_counted_by_verdict_with_the_rules_that_gave_it() -> None:
    from collections import Counter

    from bridgebench.timing.diff_rules import DIFFERENT
    from evidence.coverage import said_by_rule  # evidence/coverage.py's "diff said" line

    said = Counter({(UNDECIDED, "ratio"): 2, (UNDECIDED, "too few"): 1, (SLOWER, "ratio"): 4})
    assert said_by_rule(said) == "slower 4 (ratio 4), different 0, undecided 3 (too few 1, ratio 2)"
    said[DIFFERENT, "reaching"] += 1
    assert "different 1 (reaching 1)" in said_by_rule(said)


def test_a_counted_truth_holds_timed_intervals_only_where_it_is_known_within_the_margin() -> None:
    from evidence.coverage import Count, settled  # evidence/coverage.py --truths

    truths = {"fasta": ratio(1.0065, 1.0308, 1.0186), "md5": ratio(0.9738, 0.9755, 0.9746),
              "heapsort": ratio(0.793, 1.3696, 1.0422), "none": ratio(None, None)}
    known, unsettled = settled(truths)
    assert sorted(known) == ["fasta", "md5"] and sorted(unsettled) == ["heapsort", "none"]
    count = Count()
    count.add(ratio(1.008, 1.018, 1.013), known["fasta"].value, False, "fasta", "campaign 7", 0.02, known["fasta"])
    count.add(ratio(1.005, 1.074, 1.039), known["md5"].value, False, "md5", "campaign 1", 0.02, known["md5"])
    assert count.missed == 2
    assert count.misses[0].endswith("overlapping the counted truth's 1.0065–1.0308")
    assert "overlapping" not in count.misses[1]  # it lies clear of the counted one


def test_the_tost_script_narrows_a_student_interval_to_twice_its_level_less_one() -> None:
    """evidence/tost.py: the interval at 2c - 1 of a ratio over k blocks is the same t interval at t(c, k - 1)."""
    import math

    from bridgebench.stats.executions import t_quantile
    from bridgebench.stats.lockstep import LOCKSTEP_METHOD
    from evidence.tost import tost_interval

    half = 0.03  # on the log scale, at 99 % over 12 blocks
    ratio = Estimate(1.0, math.exp(-half), math.exp(half), 0.99, LOCKSTEP_METHOD, 12)
    low, high = tost_interval(ratio)
    assert math.log(high) == pytest.approx(half * t_quantile(0.99, 11) / t_quantile(0.995, 11))
    assert math.log(low) == pytest.approx(-math.log(high))
    assert tost_interval(Estimate(1.0, 0.9, 1.1, 0.99, "Welch's t over process executions (log scale)", 12)) is None
    assert tost_interval(Estimate(1.0, None, None, 0.99, LOCKSTEP_METHOD, 2)) is None
