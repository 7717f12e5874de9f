from __future__ import annotations

import numpy as np
import pytest

from bridgebench.stats import (
    BAD_INCONSISTENT,
    FLAT,
    GOOD_INCONSISTENT,
    NO_STEADY_STATE,
    SLOWDOWN,
    WARMUP,
    Spread,
    classify_execution,
    outlier_mask,
    summarise,
)
from bridgebench.stats.summary import (
    CHANGEPOINTS_METHOD,
    NOT_CLASSIFIED,
    PLAIN_METHOD,
    unclassified_start,
    warmup_length,
)


def _flat(seed: int, n: int = 400) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.02, 0.0002, n)


def _warmup(seed: int, until: int, n: int = 400) -> np.ndarray:
    x = _flat(seed, n)
    x[:until] += 0.01
    return x


def _no_steady_state(seed: int, n: int = 400) -> np.ndarray:
    x = _flat(seed, n)
    x[340:370] += 0.01
    return x


def test_mix_of_flat_and_warmup() -> None:
    series = [_flat(0), _flat(1), _flat(2), _warmup(3, 60), _warmup(4, 100)]
    s = summarise(series, rng=np.random.default_rng(0))
    assert s.classification == GOOD_INCONSISTENT
    assert s.class_counts == {FLAT: 3, WARMUP: 2, SLOWDOWN: 0, NO_STEADY_STATE: 0}
    iterations = [1, 1, 1, 61, 101]
    p5, median, p95 = np.percentile(iterations, [5, 50, 95])
    assert s.steady_iteration == Spread(median, p5, p95)
    seconds = [0.0, 0.0, 0.0, float(np.sum(series[3][:60])), float(np.sum(series[4][:100]))]
    p5, median, p95 = np.percentile(seconds, [5, 50, 95])
    assert s.steady_seconds == Spread(pytest.approx(median), pytest.approx(p5), pytest.approx(p95))
    assert s.steady_performance is not None
    assert s.steady_performance.low < 0.02 < s.steady_performance.high
    assert s.steady_performance.confidence == 0.99
    assert s.method == CHANGEPOINTS_METHOD


def test_no_steady_state_executions_are_left_out_of_the_spreads() -> None:
    series = [_warmup(5, 80), _warmup(6, 80), _no_steady_state(7)]
    s = summarise(series, confidence=0.95, rng=np.random.default_rng(1))
    assert s.classification == BAD_INCONSISTENT
    assert s.class_counts[NO_STEADY_STATE] == 1
    assert s.class_counts[WARMUP] == 2
    assert s.steady_iteration == Spread(81.0, 81.0, 81.0)
    assert s.steady_performance is not None
    assert s.steady_performance.confidence == 0.95


def test_all_without_steady_state() -> None:
    s = summarise([_no_steady_state(8), _no_steady_state(9)])
    assert s.classification == NO_STEADY_STATE
    assert s.class_counts == {FLAT: 0, WARMUP: 0, SLOWDOWN: 0, NO_STEADY_STATE: 2}
    assert s.steady_iteration is None
    assert s.steady_seconds is None
    assert s.steady_performance is None
    assert s.method == CHANGEPOINTS_METHOD


def test_all_flat() -> None:
    s = summarise([_flat(10), _flat(11)])
    assert s.classification == FLAT
    assert s.steady_iteration == Spread(1.0, 1.0, 1.0)
    assert s.steady_seconds == Spread(0.0, 0.0, 0.0)
    # Two process executions: an estimate and no interval; the within-process bootstrap has one, labelled.
    assert s.steady_performance is not None and not s.steady_performance.has_interval
    assert s.steady_performance.executions == 2 and "too few process executions" in s.steady_performance.method
    assert s.steady_bootstrap is not None and s.steady_bootstrap.has_interval


def test_classify_options_are_passed_on() -> None:
    series = [_warmup(12, 60), _warmup(13, 60)]
    assert summarise(series).classification == WARMUP
    assert summarise(series, delta_relative=1.0).classification == FLAT


def test_too_short_for_changepoints() -> None:
    rng = np.random.default_rng(14)
    series = [rng.normal(0.02, 0.0002, 30) for _ in range(4)]
    series[1][20] = 1.0  # an outlier, left out of the pooled sample
    series.append(rng.normal(0.02, 0.0002, 49))  # every series is too short: nothing is classified
    s = summarise(series, rng=rng)
    assert s.classification == NOT_CLASSIFIED
    assert s.class_counts == {}
    assert s.steady_iteration is None
    assert s.steady_seconds is None
    assert s.method == PLAIN_METHOD
    # Each execution's first iteration is not steady (a fresh process's: summary.unclassified_start).
    steady = [x[1:] for x in series]
    pooled = np.concatenate([x[~outlier_mask(x)] for x in steady])
    assert len(pooled) == sum(len(x) for x in series) - len(series) - 1
    # Over process executions: the geometric mean of each one's mean without outliers, a t interval.
    per_execution = [float(np.mean(x[~outlier_mask(x)])) for x in steady]
    assert s.steady_performance is not None and s.steady_performance.executions == 5
    assert s.steady_performance.value == pytest.approx(float(np.exp(np.mean(np.log(per_execution)))))
    assert s.steady_performance.low < 0.02 < s.steady_performance.high
    # Beside it, labelled as such, the bootstrap of every iteration pooled.
    assert s.steady_bootstrap is not None and "plain bootstrap" in s.steady_bootstrap.method
    assert s.steady_bootstrap.value == pytest.approx(float(np.mean(pooled)))


def test_short_executions_beside_classified_ones_start_after_the_cells_warm_up() -> None:
    # A campaign's later executions, shortened (later_share): the long ones are classified and give the
    # class; a short one is not, and its number starts where the latest of the long ones' warm-ups ended.
    long = [_warmup(20, 3, 100), _warmup(21, 5, 100), _flat(22, 100)]
    short = [_warmup(23 + i, 5, 20) for i in range(3)]  # each warms up for 5 iterations, too few to classify
    s = summarise(long + short, rng=np.random.default_rng(0))
    assert s.method == CHANGEPOINTS_METHOD and s.classification == GOOD_INCONSISTENT
    assert s.class_counts == {FLAT: 1, WARMUP: 2, SLOWDOWN: 0, NO_STEADY_STATE: 0}  # the long ones only
    assert s.steady_performance is not None and s.steady_performance.executions == 6
    # Without the skip the short ones' means would hold 5 of 20 iterations 50 % slower: ×1.125.
    assert s.steady_performance.value == pytest.approx(0.02, rel=0.01)
    assert warmup_length([classify_execution(x) for x in long] + [None] * 3) == 5
    assert warmup_length([None, None]) is None
    assert warmup_length([classify_execution(_flat(1, 100))]) == 0


def test_precomputed_classes_are_used() -> None:
    series = [_flat(16), _warmup(17, 60), _warmup(18, 90)]
    classes = [classify_execution(x) for x in series]
    fresh = summarise(series, rng=np.random.default_rng(3))
    reused = summarise(series, classes=classes, rng=np.random.default_rng(3))
    assert reused == fresh
    partly = summarise(series, classes=[None, classes[1], None], rng=np.random.default_rng(3))
    assert partly == fresh
    # The given classes are taken as they are (here: computed with a tolerance that makes all flat).
    lenient = [classify_execution(x, delta_relative=1.0) for x in series]
    assert summarise(series, classes=lenient).classification == FLAT
    with pytest.raises(ValueError):
        summarise(series, classes=classes[:2])
    # Too short: nothing is classified, whatever is passed.
    short = [x[:30] for x in series]
    assert summarise(short, classes=[None, None, None]).method == PLAIN_METHOD


def test_rejects_empty_input() -> None:
    with pytest.raises(ValueError):
        summarise([])
    with pytest.raises(ValueError):
        summarise([np.array([])])


def test_an_unclassified_execution_counts_from_its_second_iteration_or_its_cells_warm_up() -> None:
    assert unclassified_start(None, 5) == 1 and unclassified_start(None, 3) == 1
    assert unclassified_start(None, 2) == 0 and unclassified_start(None, 1) == 0  # two or more must be left
    assert unclassified_start(4, 10) == 4 and unclassified_start(0, 10) == 0 and unclassified_start(12, 10) == 10
    # a first iteration 16 % faster (PUC Lua's binarytrees: a heap not yet grown) is in no execution's number
    series = [np.array([0.84, 1.0, 1.0, 1.0, 1.0]) * k for k in (1.0, 1.01, 0.99)]
    s = summarise(series)
    assert s.steady_performance is not None
    assert s.steady_performance.value == pytest.approx(float(np.exp(np.mean(np.log([1.0, 1.01, 0.99])))))
