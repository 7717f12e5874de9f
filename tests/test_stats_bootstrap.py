from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bridgebench.stats import (
    Estimate,
    ExecutionClass,
    classify_execution,
    plain_bootstrap,
    ratio_ci,
    steady_performance,
)

bootstrap_module = importlib.import_module("bridgebench.stats.bootstrap")

REPS = 200
RESAMPLES = 2000  # fewer than the default, to keep the coverage tests quick; plenty for 99% intervals


Maker = Callable[[np.random.Generator, float], Estimate]


def _coverage(make: Maker, truth: float, confidence: float) -> float:
    """How often, over REPS fixed seeds, the interval contains the true value."""
    hits = 0
    for rep in range(REPS):
        est = make(np.random.default_rng(rep), confidence)
        assert est.low <= est.value <= est.high
        hits += est.low <= truth <= est.high
    return hits / REPS


def _plain(rng: np.random.Generator, confidence: float) -> Estimate:
    x = rng.normal(5.0, 2.0, 60)
    return plain_bootstrap(x, confidence=confidence, resamples=RESAMPLES, rng=rng)


def test_plain_bootstrap_coverage() -> None:
    assert _coverage(_plain, 5.0, 0.99) >= 0.97
    ninety = _coverage(_plain, 5.0, 0.90)
    assert 0.8 <= ninety < 1.0


def _one_execution(rng: np.random.Generator, confidence: float) -> Estimate:
    x = rng.normal(0.02, 0.002, 60)
    runs = [(x, classify_execution(x))]
    est = steady_performance(runs, confidence=confidence, resamples=RESAMPLES, rng=rng)
    assert est is not None
    return est


def test_steady_performance_coverage_one_execution() -> None:
    assert _coverage(_one_execution, 0.02, 0.99) >= 0.97
    ninety = _coverage(_one_execution, 0.02, 0.90)
    assert 0.8 <= ninety < 1.0


def _five_executions(rng: np.random.Generator, confidence: float) -> Estimate:
    runs = []
    for _ in range(5):
        x = rng.normal(0.02, 0.002, 60)
        runs.append((x, classify_execution(x)))
    est = steady_performance(runs, confidence=confidence, resamples=RESAMPLES, rng=rng)
    assert est is not None
    return est


def test_steady_performance_coverage_several_executions() -> None:
    # Pooling per-execution resample means (warmup_stats) is conservative when executions do not differ.
    assert _coverage(_five_executions, 0.02, 0.99) >= 0.97


def _ratio(rng: np.random.Generator, confidence: float) -> Estimate:
    a = rng.normal(2.0, 0.4, 50)
    b = rng.normal(3.0, 0.6, 50)
    return ratio_ci(a, b, confidence=confidence, resamples=RESAMPLES, rng=rng)


def test_ratio_ci_coverage() -> None:
    assert _coverage(_ratio, 1.5, 0.99) >= 0.97
    ninety = _coverage(_ratio, 1.5, 0.90)
    assert 0.8 <= ninety < 1.0


def test_ratio_value_and_direction() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(0.010, 0.0002, 400)
    b = rng.normal(0.013, 0.0002, 400)
    est = ratio_ci(a, b, rng=rng)
    assert est.value == pytest.approx(np.mean(b) / np.mean(a))
    assert 1.29 < est.low < est.value < est.high < 1.31
    assert est.confidence == 0.99
    with pytest.raises(ValueError):
        ratio_ci(np.zeros(5), b)


def test_steady_performance_uses_only_steady_non_outlier_iterations() -> None:
    rng = np.random.default_rng(1)
    runs = []
    for _ in range(4):
        x = rng.normal(0.010, 0.0001, 600)
        x[:150] += 0.01  # warm-up: not part of the steady state
        x[[300, 400]] += 0.5  # outliers
        cls = classify_execution(x)
        assert cls.steady_iteration == 151
        runs.append((x, cls))
    est = steady_performance(runs, rng=rng)
    assert est is not None
    assert est.low < 0.010 < est.high
    assert est.high - est.low < 0.0001
    assert est.method == bootstrap_module.STEADY_METHOD


def test_steady_performance_none_without_steady_state() -> None:
    x = 0.1 + np.random.default_rng(2).normal(0.0, 0.0005, 1000)
    x[850:900] += 0.05
    cls = classify_execution(x)
    assert cls.steady_segments == ()
    assert steady_performance([(x, cls), (x, cls)]) is None
    assert steady_performance([]) is None


def test_steady_performance_skips_executions_without_steady_state() -> None:
    rng = np.random.default_rng(3)
    good = rng.normal(0.05, 0.0005, 500)
    bad = rng.normal(0.05, 0.0005, 500)
    bad[420:460] += 0.05
    bad_cls = classify_execution(bad)
    assert bad_cls.steady_segments == ()
    alone = steady_performance([(good, classify_execution(good))], rng=np.random.default_rng(9))
    mixed = steady_performance([(good, classify_execution(good)), (bad, bad_cls)],
                               rng=np.random.default_rng(9))
    assert alone is not None and mixed is not None
    assert alone.value == mixed.value


def test_between_execution_spread_widens_the_interval() -> None:
    rng = np.random.default_rng(4)
    same = [rng.normal(0.05, 0.001, 300) for _ in range(6)]
    shifted = [x + 0.002 * (i % 2) for i, x in enumerate(same)]
    narrow = steady_performance([(x, classify_execution(x)) for x in same], rng=rng)
    wide = steady_performance([(x, classify_execution(x)) for x in shifted], rng=rng)
    assert narrow is not None and wide is not None
    assert wide.high - wide.low > 3 * (narrow.high - narrow.low)


def test_percentile_indices_follow_libkalibera() -> None:
    values = np.arange(10_000, dtype=np.float64)[::-1].copy()
    assert bootstrap_module._interval(values, 0.99) == (50.0, 9949.0)
    assert bootstrap_module._interval(values, 0.95) == (250.0, 9749.0)
    assert bootstrap_module._interval(np.array([3.0]), 0.99) == (3.0, 3.0)


def test_large_samples_use_the_normal_limit_consistently(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x = rng.lognormal(0.0, 0.5, 6000)
    assert len(x) > bootstrap_module.EXACT_MAX_N
    limit = plain_bootstrap(x, resamples=4000, rng=np.random.default_rng(1))
    monkeypatch.setattr(bootstrap_module, "EXACT_MAX_N", 10**9)
    exact = plain_bootstrap(x, resamples=4000, rng=np.random.default_rng(1))
    half_width = (exact.high - exact.low) / 2
    assert limit.value == exact.value
    assert abs(limit.low - exact.low) < 0.1 * half_width
    assert abs(limit.high - exact.high) < 0.1 * half_width


def test_plain_bootstrap_median_and_checks() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_exponential(101)
    est = plain_bootstrap(x, statistic="median", rng=rng)
    assert est.value == float(np.median(x))
    assert est.low <= est.value <= est.high
    assert "median" in est.method
    with pytest.raises(ValueError):
        plain_bootstrap(x, statistic="mode")
    with pytest.raises(ValueError):
        plain_bootstrap(np.array([]))
    with pytest.raises(ValueError):
        plain_bootstrap(x, confidence=1.0)
    with pytest.raises(ValueError):
        plain_bootstrap(x, resamples=0)


def test_same_seed_same_answer() -> None:
    x = np.random.default_rng(7).normal(1.0, 0.1, 200)
    cls: ExecutionClass = classify_execution(x)
    first = steady_performance([(x, cls)], rng=np.random.default_rng(42))
    second = steady_performance([(x, cls)], rng=np.random.default_rng(42))
    assert first == second


def _executions(rng: np.random.Generator, mean: float, k: int = 5, m: int = 100) -> list[np.ndarray]:
    """k process executions whose own means scatter by 2% around `mean`, with 0.5% noise within."""
    return [rng.normal(mean * (1 + rng.normal(0, 0.02)), mean * 0.005, m) for _ in range(k)]


def test_two_level_ratio_carries_the_spread_between_executions() -> None:
    rng = np.random.default_rng(11)
    covered_two_level = covered_pooled = 0
    trials = 60
    for _ in range(trials):
        a, b = _executions(rng, 1.0), _executions(rng, 1.05)
        two = ratio_ci(a, b, resamples=2000, rng=rng)
        pooled = ratio_ci(np.concatenate(a), np.concatenate(b), resamples=2000, rng=rng)
        covered_two_level += two.low <= 1.05 <= two.high
        covered_pooled += pooled.low <= 1.05 <= pooled.high
        assert two.method.startswith("two-level")
    # Pooling treats 500 iterations as independent when only 5 executions are: its 99% CI is far too narrow.
    assert covered_pooled < 0.5 * trials
    # Five executions are few for a bootstrap (it under-covers), but the interval is honest about them.
    assert covered_two_level >= 0.85 * trials


def test_two_level_ratio_of_one_execution_each_is_the_one_level_ratio() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 0.01, 200), rng.normal(2.0, 0.01, 200)
    one = ratio_ci(a, b, rng=np.random.default_rng(5))
    two = ratio_ci([a], [b], rng=np.random.default_rng(5))
    assert two.value == pytest.approx(one.value)
    assert two.low == pytest.approx(one.low, rel=1e-3) and two.high == pytest.approx(one.high, rel=1e-3)


# --- the expansion against draw-by-draw resampling, on recorded series ------------------------------------
RECORDED = json.loads((Path(__file__).parent / "fixtures" / "recorded-series.json").read_text())["series"]
EXACT_SEEDS = 6
# The expansion's interval ends must lie within this many standard deviations of the draw-by-draw ends'
# spread over seeds (their Monte-Carlo error) from those ends' mean: 4 sd makes a false alarm rarer than
# 1 in 10 000 per end, while the expansion's omitted terms (order 1/n^1.5) would show as shifts of many sd.
TOLERANCE_SD = 4.0


def _steady(key: str) -> list[np.ndarray]:
    out = []
    for values in RECORDED[key]:
        x = np.array(values)
        cls = classify_execution(x)
        keep = np.zeros(len(x), dtype=bool)
        for seg in cls.steady_segments:
            keep[seg.start:seg.end] = True
        if (keep & ~cls.outliers).sum() > 1:
            out.append(x[keep & ~cls.outliers])
    return out


def _agrees(expanded: tuple[float, float], exact: list[tuple[float, float]]) -> None:
    ends = np.array(exact)
    mean, sd = ends.mean(axis=0), ends.std(axis=0, ddof=1)
    for got, m, s in zip(expanded, mean, sd, strict=True):
        assert abs(got - m) <= TOLERANCE_SD * s + 1e-12 * abs(m), (expanded, mean, sd)


@pytest.mark.parametrize("bench", ["queens", "md5"])
def test_the_expansion_gives_the_intervals_of_draw_by_draw_resampling(bench: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    base, other = _steady(f"{bench}/luajit"), _steady(f"{bench}/lua54")
    assert max(len(s) for s in base + other) > bootstrap_module.EXACT_MAX_N  # the expansion is used for some
    executions = [(np.array(v), classify_execution(np.array(v))) for v in RECORDED[f"{bench}/lua54"]]

    def both(seed: int) -> tuple[tuple[float, float], tuple[float, float]]:
        r = ratio_ci(base, other, rng=np.random.default_rng(seed))
        p = steady_performance(executions, rng=np.random.default_rng(seed))
        assert p is not None
        return (r.low, r.high), (p.low, p.high)

    def tails(x: np.ndarray, seed: int) -> tuple[float, float]:
        """The 99% interval of one sample's resampled means: where the expansion acts, undiluted."""
        sums = bootstrap_module._resample_sums(x, 10_000, np.random.default_rng(seed))
        return bootstrap_module._interval(sums / len(x), 0.99)

    large = [x for x in base + other if len(x) > bootstrap_module.EXACT_MAX_N]
    ratio, perf = both(0)
    single = [tails(x, 0) for x in large]
    monkeypatch.setattr(bootstrap_module, "EXACT_MAX_N", 10**9)  # every sample resampled draw by draw
    exact = [both(seed) for seed in range(1, EXACT_SEEDS + 1)]
    _agrees(ratio, [e[0] for e in exact])
    _agrees(perf, [e[1] for e in exact])
    for x, got in zip(large, single, strict=True):
        _agrees(got, [tails(x, seed) for seed in range(1, EXACT_SEEDS + 1)])


def test_samples_too_skewed_for_the_expansion_are_resampled_draw_by_draw() -> None:
    x = np.ones(400)
    x[:4] = 100.0  # a few huge values: the mean of a resample is far from normal
    assert bootstrap_module._expanded_sums(x, 10, np.random.default_rng(0)) is None
    sums = bootstrap_module._resample_sums(x, 2000, np.random.default_rng(0))
    # draw by draw, a resample's sum moves in steps of 99 (one more or one fewer huge value)
    assert set(np.round((sums - 400) / 99, 6)) <= set(range(0, 20))
