from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from bridgebench.stats import (
    BAD_INCONSISTENT,
    FLAT,
    GOOD_INCONSISTENT,
    KINDS,
    NO_STEADY_STATE,
    SLOWDOWN,
    WARMUP,
    classify_benchmark,
    classify_execution,
    too_short_for_changepoints,
)
from bridgebench.stats.classify import from_record, to_record

N = 1000


def _noise(seed: int, n: int = N, sd: float = 0.0005) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, sd, n)


@pytest.mark.parametrize("seed", range(3))
def test_flat(seed: int) -> None:
    x = 0.1 + _noise(seed)
    c = classify_execution(x)
    assert c.kind == FLAT
    assert len(c.segments) == 1
    assert (c.segments[0].start, c.segments[0].end) == (0, N)
    assert c.steady_segments == c.segments
    assert c.steady_iteration == 1
    assert c.steady_seconds == 0.0


@pytest.mark.parametrize("seed", range(3))
def test_warmup_slow_first_fifth(seed: int) -> None:
    x = 0.1 + _noise(seed)
    x[:200] += 0.05
    c = classify_execution(x)
    assert c.kind == WARMUP
    assert abs(c.steady_segments[0].start - 200) <= 2
    assert c.steady_segments[-1].end == N


def test_warmup_steady_iteration_and_seconds_are_exact() -> None:
    x = 0.1 + _noise(0, sd=1e-6)
    x[:120] = 0.3 + _noise(1, 120, sd=1e-6)
    x[120:250] = 0.2 + _noise(2, 130, sd=1e-6)
    c = classify_execution(x)
    assert c.kind == WARMUP
    assert [(s.start, s.end) for s in c.segments] == [(0, 120), (120, 250), (250, N)]
    assert c.steady_iteration == 251  # 1-based: iteration 251 (index 250) is the first steady one
    assert c.steady_seconds == float(np.sum(x[:250]))
    assert c.steady_segments == (c.segments[-1],)
    assert c.segments[0].mean == pytest.approx(0.3, abs=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_slowdown(seed: int) -> None:
    x = 0.1 + _noise(seed)
    x[400:] += 0.03  # fast for the first 40%, slower from then to the end
    c = classify_execution(x)
    assert c.kind == SLOWDOWN
    assert abs(c.steady_iteration - 401) <= 2
    assert c.steady_seconds == float(np.sum(x[: c.steady_iteration - 1]))


@pytest.mark.parametrize("seed", range(3))
def test_no_steady_state_blip_in_last_quarter(seed: int) -> None:
    x = 0.1 + _noise(seed)
    x[850:900] += 0.05
    c = classify_execution(x)
    assert c.kind == NO_STEADY_STATE
    assert c.steady_segments == ()
    assert c.steady_iteration is None
    assert c.steady_seconds is None
    assert len(c.segments) == 3


def test_steady_fraction_decides_late_changes() -> None:
    x = 0.1 + _noise(4)
    x[850:] += 0.05  # slower from 85% to the end
    assert classify_execution(x).kind == NO_STEADY_STATE
    late = classify_execution(x, steady_fraction=0.1)  # now the change is before the last 10%
    assert late.kind == SLOWDOWN
    assert abs(late.steady_iteration - 851) <= 2


def test_an_earlier_faster_segment_makes_it_a_slowdown() -> None:
    # As in warmup_stats: walking back from the steady state, a slower segment alone is a warm-up, but a
    # faster one anywhere before it makes the execution a slowdown.
    x = 0.1 + _noise(5)
    x[:150] -= 0.03
    x[150:300] += 0.05
    c = classify_execution(x)
    assert len(c.segments) == 3
    assert c.kind == SLOWDOWN
    assert abs(c.steady_iteration - 301) <= 2


def test_delta_makes_small_shifts_equivalent() -> None:
    x = 0.1 + _noise(6, sd=0.0002)
    x[:200] += 0.0005  # 0.5% slower at first: found by PELT, but below the 1% relative tolerance
    c = classify_execution(x)
    assert len(c.segments) == 2
    assert c.kind == FLAT
    assert c.steady_segments == c.segments
    assert c.steady_iteration == 1
    assert c.steady_seconds == 0.0
    strict = classify_execution(x, delta=0.0, delta_relative=0.0)
    assert strict.kind == WARMUP
    assert abs(strict.steady_iteration - 201) <= 2
    absolute = classify_execution(x, delta=0.001, delta_relative=0.0)  # warmup_stats's default
    assert absolute.kind == FLAT


def test_variance_is_a_width_as_in_warmup_stats() -> None:
    # 2.5% slower for a while, but so noisy there (variance 0.09 s²) that, by warmup_stats's rule (mean ±
    # variance), the segment overlaps the steady one.
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(2.05, 0.3, 300), rng.normal(2.0, 0.03, 700)])
    c = classify_execution(x)
    assert len(c.segments) == 2
    assert c.kind == FLAT


def test_outliers_are_left_out() -> None:
    x = 0.1 + _noise(8)
    x[:200] += 0.05
    spikes = [300, 555, 901]
    x[spikes] += 1.0
    c = classify_execution(x)
    assert np.flatnonzero(c.outliers).tolist() == spikes
    assert c.kind == WARMUP
    assert len(c.segments) == 2
    assert c.segments[-1].mean == pytest.approx(0.1, abs=1e-4)
    assert c.steady_seconds == float(np.sum(x[: c.steady_iteration - 1]))


def test_segments_tile_the_series() -> None:
    x = 0.1 + _noise(9)
    x[:100] += 0.02
    x[100:220] += 0.01
    x[[50, 99, 100, 101, 500]] += 2.0  # outliers near a changepoint, too
    c = classify_execution(x)
    assert c.segments[0].start == 0
    assert c.segments[-1].end == N
    assert all(a.end == b.start for a, b in itertools.pairwise(c.segments))


def test_equality_and_hash_ignore_the_mask_array() -> None:
    x = 0.1 + _noise(10)
    a, b = classify_execution(x), classify_execution(x.copy())
    assert a == b
    assert hash(a) == hash(b)
    assert not a.outliers.flags.writeable


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        classify_execution(np.array([]))
    with pytest.raises(ValueError):
        classify_execution(np.array([0.1, np.nan] * 40))
    with pytest.raises(ValueError):
        classify_execution(np.ones(100), steady_fraction=1.5)


def test_too_short_for_changepoints() -> None:
    assert too_short_for_changepoints(5)
    assert too_short_for_changepoints(49)
    assert not too_short_for_changepoints(50)
    assert not too_short_for_changepoints(2000)


def test_classify_benchmark_all_combinations() -> None:
    for kind in KINDS:
        assert classify_benchmark([kind]) == kind
        assert classify_benchmark([kind] * 7) == kind
    for size in range(2, len(KINDS) + 1):
        for combo in itertools.combinations(KINDS, size):
            expected = GOOD_INCONSISTENT if set(combo) == {FLAT, WARMUP} else BAD_INCONSISTENT
            for kinds in (list(combo), list(combo) * 2 + [combo[0]], list(reversed(combo))):
                assert classify_benchmark(kinds) == expected, kinds
    assert classify_benchmark((FLAT, WARMUP, WARMUP)) == GOOD_INCONSISTENT
    with pytest.raises(ValueError):
        classify_benchmark([])
    with pytest.raises(ValueError):
        classify_benchmark([FLAT, "sideways"])


def test_a_classification_round_trips_through_its_stored_record() -> None:
    """What analysis.py keeps in the store reads back to the same classification, outliers included, for
    every kind (through JSON, as the store keeps it)."""
    rng = np.random.default_rng(11)
    seen = set()
    for k in range(120):
        n = int(rng.integers(50, 600))
        x = rng.normal(1e-3, 1e-5, n)
        if k % 4 == 1:
            x[: n // 4] += 3e-4  # warm-up
        elif k % 4 == 2:
            x[n // 2:] += 2e-4  # slowdown
        elif k % 4 == 3:
            x[n - n // 10:] += 3e-4  # no steady state
        x[rng.integers(0, n, 3)] *= 5  # outliers
        cls = classify_execution(x)
        seen.add(cls.kind)
        back = from_record(json.loads(json.dumps(to_record(cls))))
        assert back == cls and np.array_equal(back.outliers, cls.outliers)
    assert seen == set(KINDS)
