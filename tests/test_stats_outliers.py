from __future__ import annotations

import numpy as np
import pytest

from bridgebench.stats import outliers
from bridgebench.stats.outliers import default_window, outlier_mask


def _reference(x: np.ndarray, window: int) -> list[int]:
    """The rule written out point by point, as in warmup_stats (with the window shrunk to short series)."""
    n = len(x)
    if n < 10:
        return []
    w = min(window, n)
    h = w // 2
    found = []
    for i in range(n):
        lo, hi = max(0, i - h), min(n, i + h)
        if lo == 0 and hi - lo < w:
            continue
        med, p10, p90 = (np.percentile(x[lo:hi], q) for q in (50, 10, 90))
        band = 3 * (p90 - p10)
        if x[i] > med + band or x[i] < med - band:
            found.append(i)
    return found


def test_planted_spikes_are_marked() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(0.010, 0.0002, 1000)
    spikes = [150, 420, 777, 999]
    x[spikes] += 0.005
    x[600] -= 0.004
    assert np.flatnonzero(outlier_mask(x)).tolist() == [150, 420, 600, 777, 999]


@pytest.mark.parametrize("seed", range(6))
def test_clean_data_is_not_marked(seed: int) -> None:
    rng = np.random.default_rng(seed)
    assert not outlier_mask(rng.normal(0.5, 0.01, 1500)).any()
    assert not outlier_mask(rng.uniform(0.5, 0.6, 300)).any()


def test_start_of_the_series_is_never_an_outlier() -> None:
    # The first half-window holds the warm-up; warmup_stats never calls those iterations outliers.
    rng = np.random.default_rng(1)
    x = rng.normal(0.01, 0.0001, 500)
    x[0] = 0.5
    x[5] = 0.3
    x[99] = 0.3
    x[100] = 0.3
    assert np.flatnonzero(outlier_mask(x, window=200)).tolist() == [100]


def test_short_series() -> None:
    x = np.full(9, 1.0)
    x[7] = 100.0
    assert not outlier_mask(x).any()  # fewer than 10 iterations: nothing is an outlier
    rng = np.random.default_rng(2)
    y = rng.normal(1.0, 0.01, 40)
    y[30] = 2.0
    assert np.flatnonzero(outlier_mask(y)).tolist() == [30]  # judged in a window of 20 (the smallest default)
    assert outlier_mask(np.array([])).shape == (0,)


@pytest.mark.parametrize("seed", range(10))
def test_matches_the_rule_point_by_point(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 700))
    x = rng.standard_exponential(n) ** 2
    window = int(rng.integers(2, 300))
    assert np.flatnonzero(outlier_mask(x, window)).tolist() == _reference(x, window)


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        outlier_mask(np.ones((3, 4)))
    with pytest.raises(ValueError):
        outlier_mask(np.ones(20), window=1)
    with pytest.raises(ValueError):
        outlier_mask(np.r_[np.ones(20), np.inf])


def test_the_default_window_follows_warmup_stats_where_it_can() -> None:
    assert default_window(2000) == 200  # bin/warmup_stats: int(0.1 n)
    assert default_window(5000) == 500
    assert default_window(50) == default_window(120) == 20  # not 5 or 12: see below
    # In a window of 5, one spike makes the P10-P90 spread itself: the rule could never flag it.
    rng = np.random.default_rng(3)
    x = rng.normal(1.0, 0.01, 50)
    x[30] = 3.0
    assert not outlier_mask(x, window=5).any()
    assert np.flatnonzero(outlier_mask(x)).tolist() == [30]


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_kernel_marks_exactly_what_the_numpy_reference_marks(seed: int) -> None:
    if outliers.backend() != "c":
        pytest.skip("no C compiler here: the numpy reference is in use")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 3000))
    x = 1e-3 * (1 + 0.05 * rng.standard_normal(n))
    x[rng.random(n) < 0.02] *= rng.choice([0.2, 4.0, 30.0])
    if seed % 4 == 0:
        x = np.round(x, 5)  # coarse clock: many ties within a window
    if seed % 7 == 0:
        x[: n // 3] = 2e-3  # a constant stretch
    for window in (2, 3, 20, 21, outliers.default_window(n), n, n + 5):
        w = min(window, n)
        expected = outliers._outliers_numpy(x, w, np.zeros(n, dtype=bool))
        got = outliers.outlier_mask(x, window)
        assert np.array_equal(got, expected), (seed, window)
