"""stats.drift: whether a cell's steady iterations hold still past its warm-up, on planted series."""

from __future__ import annotations

import numpy as np
import pytest

from bridgebench.stats.bootstrap import Estimate
from bridgebench.stats.drift import moves, steady_drift


def noisy(level: float, n: int, seed: int) -> np.ndarray:
    return level * (1 + np.random.default_rng(seed).normal(0, 0.01, n))


def test_a_steady_state_that_holds_still_is_within_its_interval_of_one() -> None:
    drift = steady_drift([noisy(0.01, 40, s) for s in range(5)], 10)
    assert drift is not None and drift.executions == 5 and drift.holds(1.0)
    assert not moves(drift, 0.02)


def test_one_that_keeps_speeding_up_shows_its_first_iterations_slower() -> None:
    # the first 10 steady iterations 15 % slower than the 30 after them, in each of 4 executions (havlak's shape)
    planted = [np.concatenate([noisy(0.0115, 10, s), noisy(0.01, 30, s + 10)]) for s in range(4)]
    drift = steady_drift(planted, 10)
    assert drift is not None and drift.value == pytest.approx(1.15, abs=0.01) and drift.low > 1.02
    assert moves(drift, 0.02)
    slowing = steady_drift([1 / p for p in planted], 10)
    assert slowing is not None and slowing.high < 0.98 and moves(slowing, 0.02)


def test_only_executions_with_twice_the_later_iterations_count() -> None:
    series = [noisy(0.01, 40, 1), noisy(0.01, 19, 2), noisy(0.01, 20, 3)]
    drift = steady_drift(series, 10)
    assert drift is not None and drift.executions == 2 and not drift.has_interval  # too few executions for one
    assert not moves(drift, 0.02)  # no interval, nothing shown
    assert steady_drift([noisy(0.01, 19, 4)], 10) is None
    with pytest.raises(ValueError):
        steady_drift(series, 0)


def test_moves_needs_the_whole_interval_beyond_the_margin() -> None:
    assert not moves(None, 0.02)
    assert not moves(Estimate(1.05, 1.01, 1.09, 0.99, "m", 3), 0.02)  # apart from 1, not from the margin
    assert moves(Estimate(1.05, 1.03, 1.07, 0.99, "m", 3), 0.02)
    assert moves(Estimate(0.95, 0.93, 0.97, 0.99, "m", 3), 0.02)
