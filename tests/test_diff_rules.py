"""The differ's decision rules on constructed cells: every verdict is reachable, and only when the data
carry it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bridgebench.question import EQUIVALENT, FASTER, SLOWER, UNDECIDED
from bridgebench.result import Failure
from bridgebench.stats import Estimate, Spread
from bridgebench.timing.diff_rules import (
    CLASSES,
    DIFFERENT,
    INTERVALS,
    NOTHING,
    RATIO,
    REACHING,
    RULES,
    TOO_FEW,
    Interval,
    compare_cells,
    multinomial_cis,
    overall,
)
from bridgebench.timing.result import Cell


def cell(value: float | None, half: float = 0.01, counts: dict[str, int] | None = None,
         failures: int = 0, it: tuple[float, float, float] | None = (1, 1, 2)) -> Cell:
    return Cell("bench", "m", 10, tuple(Failure(i, "crashed", "", "") for i in range(failures)), None, 0, 0,
                class_counts=counts if counts is not None else {"flat": 10},
                steady_performance=None if value is None else Estimate(value, value - half, value + half, 0.99, "t"),
                steady_iteration=None if it is None else Spread(*it))


def verdict(a: Cell, b: Cell) -> str:
    return compare_cells("bench", "A", "B", a, b, None).verdict


def test_non_overlapping_cis_give_faster_or_slower() -> None:
    assert verdict(cell(1.0), cell(0.9)) == FASTER
    assert verdict(cell(1.0), cell(1.1)) == SLOWER


def test_overlapping_cis_give_undecided_never_unchanged() -> None:
    assert verdict(cell(1.0), cell(1.015)) == UNDECIDED
    assert verdict(cell(1.0, half=0.2), cell(0.9, half=0.2)) == UNDECIDED  # a big effect, but too noisy to say


def test_a_ratio_interval_decides_before_the_overlap_of_the_two_sides() -> None:
    def ratio(low: float, high: float) -> Estimate:
        return Estimate((low + high) / 2, low, high, 0.99, "paired by round")

    a, b = cell(1.0, half=0.03), cell(1.02, half=0.03)  # the sides' intervals overlap
    assert compare_cells("bench", "A", "B", a, b, None).verdict == UNDECIDED
    worse = compare_cells("bench", "A", "B", a, b, ratio(1.005, 1.035))
    assert worse.verdict == SLOWER and "lies above 1" in worse.reason
    assert compare_cells("bench", "A", "B", b, a, ratio(0.965, 0.995)).verdict == FASTER
    # the interval holds 1: equivalent inside the margin, undecided past it (0.91–1.21 is not "unchanged")
    assert compare_cells("bench", "A", "B", a, b, ratio(0.99, 1.05)).verdict == UNDECIDED
    assert compare_cells("bench", "A", "B", a, b, ratio(0.91, 1.21)).verdict == UNDECIDED
    assert compare_cells("bench", "A", "B", a, b, ratio(0.99, 1.015)).verdict == EQUIVALENT
    assert compare_cells("bench", "A", "B", a, b, ratio(0.99, 1.04), margin=0.05).verdict == EQUIVALENT
    # a ratio that holds 1 wins over sides far apart too: the ratio is the test, the sides are not
    assert compare_cells("bench", "A", "B", cell(1.0), cell(1.1), ratio(0.95, 1.2)).verdict == UNDECIDED
    # a ratio with no interval leaves the sides' rule
    assert compare_cells("bench", "A", "B", cell(1.0), cell(1.1),
                         Estimate(1.1, None, None, 0.99, "too few")).verdict == SLOWER


def test_a_steady_state_on_one_side_only_is_different_when_its_share_is_beyond_chance() -> None:
    assert verdict(cell(1.0), cell(None, counts={"no steady state": 10})) == DIFFERENT

    never = replace(cell(None, counts={"no steady state": 5}), executions_ok=5)
    every = compare_cells("bench", "A", "B", never, some(5, 5), None)
    assert every.verdict == DIFFERENT and "only B reaches a steady state, in 5 of 5" in every.reason
    # one execution of five reaching a steady state: what the slow host's self-test called A vs A different
    once = compare_cells("bench", "A", "B", some(1, 5), never, None)
    assert once.verdict == UNDECIDED and "only A reaches a steady state, in 1 of 5" in once.reason
    assert "against 0 of 5" in once.reason and "p = 1" in once.reason
    assert verdict(some(4, 5), never) == UNDECIDED  # p = 0.048: not at 99 %


def some(k: int, n: int, interval: bool = True) -> Cell:
    """A cell whose steady performance rests on k of its n process executions (the others reach none)."""
    c = cell(1.0, counts={"flat": k, "no steady state": n - k})
    perf = replace(c.steady_performance, executions=k)
    return replace(c, executions_ok=n, steady_performance=perf if interval else replace(perf, low=None, high=None))


def test_a_few_executions_read_as_steady_do_not_hide_a_side_that_has_no_steady_state() -> None:
    """The late-step self-test's misses: the side without a steady state had one execution read as steady, so
    both sides had a steady performance, and the differ stopped at "too few" for that side's interval."""
    late = compare_cells("bench", "A", "B", some(8, 8), some(1, 8, interval=False), None)
    assert late.verdict == DIFFERENT
    assert "A reaches a steady state in 8 of 8 process executions, B in 1 of 8" in late.reason
    # at 5 executions a cell, 5 of 5 against 1 of 5 is p = 0.048: undecided, for B's too few steady executions
    five = compare_cells("bench", "A", "B", some(5, 5), some(1, 5, interval=False), None)
    assert five.verdict == UNDECIDED and five.too_few and "too few" in five.reason
    # shares apart beyond chance outrank a ratio that would call them equivalent: most of B never settles
    both = compare_cells("bench", "A", "B", some(12, 12), some(3, 12), Estimate(1.0, 0.995, 1.005, 0.99, "paired"))
    assert both.verdict == DIFFERENT and "B in 3 of 12" in both.reason
    # shares apart by chance leave the ratio to decide, and equal shares say nothing of them
    near = compare_cells("bench", "A", "B", some(8, 8), some(6, 8), Estimate(1.0, 0.995, 1.005, 0.99, "paired"))
    assert near.verdict == EQUIVALENT and "steady state in" not in near.reason


def test_neither_side_steady_is_undecided_and_says_why() -> None:
    c = compare_cells("bench", "A", "B", cell(None, counts={"no steady state": 10}),
                      cell(None, counts={"no steady state": 10}), None)
    assert c.verdict == UNDECIDED and not c.too_few
    assert "neither side" in c.reason


def test_class_counts_that_clearly_differ_make_it_different_even_if_faster() -> None:
    a = cell(1.0, counts={"flat": 30})
    b = cell(0.5, counts={"slowdown": 30})
    c = compare_cells("bench", "A", "B", a, b, None)
    assert c.verdict == DIFFERENT
    assert "flat" in c.reason or "slowdown" in c.reason


def test_failures_count_as_a_class() -> None:
    assert verdict(cell(1.0, counts={"flat": 30}), cell(1.0, counts={}, failures=30)) == DIFFERENT


def test_few_process_executions_cannot_show_a_class_change() -> None:
    # 3 flat vs 2 flat + 1 warmup: the multinomial CIs of 3 executions are far too wide to tell.
    assert verdict(cell(1.0, counts={"flat": 3}), cell(1.0, counts={"flat": 2, "warmup": 1})) == UNDECIDED


def test_goodman_intervals_hold_the_observed_share_and_narrow_with_n() -> None:
    small = multinomial_cis({"flat": 3, "warmup": 1})
    large = multinomial_cis({"flat": 300, "warmup": 100})
    for cis, n in ((small, 4), (large, 400)):
        assert cis["flat"].low <= 0.75 <= cis["flat"].high
        assert cis["slowdown"].low == 0.0
        assert cis["warmup"].low <= 0.25 <= cis["warmup"].high, n
    assert (large["flat"].high - large["flat"].low) < (small["flat"].high - small["flat"].low) / 5


def test_steady_iteration_ranges_are_compared() -> None:
    c = compare_cells("b", "A", "B", cell(1.0, it=(1, 1, 2)), cell(1.0, it=(50, 40, 60)), None)
    assert (c.steady_iteration_overlap, c.warmup_verdict) == (False, "later")
    c = compare_cells("b", "A", "B", cell(1.0, it=(50, 40, 60)), cell(1.0, it=(1, 1, 2)), None)
    assert c.warmup_verdict == "sooner"
    c = compare_cells("b", "A", "B", cell(1.0, it=(1, 1, 45)), cell(1.0, it=(50, 40, 60)), None)
    assert (c.steady_iteration_overlap, c.warmup_verdict) == (True, "same")
    c = compare_cells("b", "A", "B", cell(1.0, it=None), cell(1.0, it=(50, 40, 60)), None)
    assert c.warmup_verdict == "—"


@pytest.mark.parametrize(("a", "b", "overlap"), [((0, 1), (1, 2), True), ((0, 1), (1.01, 2), False)])
def test_interval_overlap(a: tuple[float, float], b: tuple[float, float], overlap: bool) -> None:
    assert Interval(*a).overlaps(Interval(*b)) is overlap


def test_overall_counts_verdicts() -> None:
    comps = [compare_cells("x", "A", "B", cell(1.0), cell(0.5), None),
             compare_cells("y", "A", "B", cell(1.0), cell(1.0), None)]
    assert overall(comps) == "1 faster, 1 undecided"


def test_too_few_executions_are_undecided_and_say_so() -> None:
    few = Cell("bench", "m", 2, (), None, 0, 0, class_counts={"flat": 2},
               steady_performance=Estimate(1.0, None, None, 0.99, "too few", 2))
    c = compare_cells("bench", "A", "B", cell(1.0), few, None)
    assert c.verdict == UNDECIDED and c.too_few


def test_every_comparison_names_the_rule_that_answered_it() -> None:
    """So that counts of verdicts (evidence/coverage.py, `diff --json`) tell a difference in behaviour from one in
    speed without reading the reason's words; every rule is reachable."""
    never = cell(None, counts={"no steady state": 10})
    paired = Estimate(1.0, 0.995, 1.005, 0.99, "paired")
    few = replace(cell(1.0, counts={"flat": 2}), steady_performance=Estimate(1.0, None, None, 0.99, "too few", 2))
    said = {
        CLASSES: compare_cells("bench", "A", "B", cell(1.0, counts={"flat": 30}), cell(0.5, counts={"slowdown": 30}),
                               None),
        REACHING: compare_cells("bench", "A", "B", some(8, 8), some(1, 8, interval=False), None),
        NOTHING: compare_cells("bench", "A", "B", never, never, None),
        TOO_FEW: compare_cells("bench", "A", "B", cell(1.0), few, None),
        RATIO: compare_cells("bench", "A", "B", cell(1.0), cell(1.0), paired),
        INTERVALS: compare_cells("bench", "A", "B", cell(1.0), cell(1.1), None),
    }
    assert {rule: c.rule for rule, c in said.items()} == {rule: rule for rule in RULES}
    assert [said[r].verdict for r in RULES] == [DIFFERENT, DIFFERENT, UNDECIDED, UNDECIDED, EQUIVALENT, SLOWER]
    assert [r for r in RULES if said[r].too_few] == [TOO_FEW]
    # the Fisher test also answers, undecided, where its share is one that chance gives
    assert compare_cells("bench", "A", "B", some(1, 5), replace(never, executions_ok=5), None).rule == REACHING
