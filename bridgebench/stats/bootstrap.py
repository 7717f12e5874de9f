"""Bootstrap estimates: steady-state performance across process executions (warmup_stats's scheme), a
plain bootstrap for budgets too small for changepoints, and the CI of a ratio of means."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from bridgebench.stats.classify import ExecutionClass

__all__ = ["EXACT_MAX_N", "Estimate", "plain_bootstrap", "ratio_ci", "steady_performance"]

EXACT_MAX_N = 200
"""Samples up to this size are resampled draw by draw. For larger ones the mean of a resample is drawn from
its distribution's Cornish-Fisher expansion to second order: a standard normal z bent by the mean's skewness
s = skew / sqrt(n) and excess kurtosis k = kurt / n (the sample's, plug-in), then scaled by the sample's
standard deviation / sqrt(n). What that leaves out is of order 1/n^1.5. Drawing n indices per resample
instead would cost resamples × n random numbers per sample: 10^10 for a 2000-iteration campaign of 240
process executions. Samples whose resampled mean is too far from normal for the expansion
(|s| > MAX_SKEW or |k| > MAX_KURTOSIS) are resampled draw by draw whatever their size."""

MAX_SKEW = 0.3
MAX_KURTOSIS = 0.5

_BLOCK_CELLS = 1 << 21  # random indices generated per block (bounds memory)

STEADY_METHOD = "bootstrap within steady segments, pooled over executions (warmup_stats)"


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a two-sided ``confidence`` interval ``[low, high]``; ``method`` says how.
    ``low`` and ``high`` are None when the data cannot back an interval (too few process executions:
    stats.executions); ``executions`` is how many process executions it rests on, where that is known."""

    value: float
    low: float | None
    high: float | None
    confidence: float
    method: str
    executions: int | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def holds(self, x: float) -> bool:
        """The interval holds x (False without an interval: it claims nothing)."""
        return self.low is not None and self.high is not None and self.low <= x <= self.high

    @property
    def reach(self) -> float | None:
        """How far the interval reaches from the estimate: its farther end's distance (what "± r" means in a
        report and in a budget's "within ±X %", so that both ends lie within it); None without an interval."""
        if self.low is None or self.high is None:
            return None
        return max(self.high - self.value, self.value - self.low)


def steady_performance(executions: Sequence[tuple[np.ndarray, ExecutionClass]], *, confidence: float = 0.99,
                       resamples: int = 10_000, rng: np.random.Generator | None = None) -> Estimate | None:
    """Steady-state iteration time across process executions, as warmup_stats computes it.

    Only executions with a steady state count. Each gets ``floor(resamples / k) + 1`` bootstrap resamples
    (``k`` such executions): every steady segment is resampled with replacement on its own, at its own size,
    outliers left out, and the resample's statistic is the mean of all its iterations. The resample means of
    all executions are pooled; the estimate is their median and the interval their percentile interval.
    Pooling per-execution means makes the interval reflect the spread between executions as well as the
    noise within them. None when no execution reached a steady state.
    """
    _check(confidence, resamples)
    gen = rng if rng is not None else np.random.default_rng()
    data: list[list[np.ndarray]] = []
    for times, cls in executions:
        if not cls.steady_segments:
            continue
        x = np.asarray(times, dtype=np.float64)
        segs = []
        for seg in cls.steady_segments:
            values = x[seg.start:seg.end][~cls.outliers[seg.start:seg.end]]
            if len(values):
                segs.append(values)
        if segs:
            data.append(segs)
    if not data:
        return None
    per_execution = resamples // len(data) + 1
    pooled = []
    for segs in data:
        total = sum(len(v) for v in segs)
        sums = np.zeros(per_execution)
        for values in segs:
            sums += _resample_sums(values, per_execution, gen)
        pooled.append(sums / total)
    means = np.concatenate(pooled)
    low, high = _interval(means, confidence)
    return Estimate(float(np.median(means)), low, high, confidence, STEADY_METHOD)


def plain_bootstrap(samples: np.ndarray, *, confidence: float = 0.99, resamples: int = 10_000,
                    statistic: str = "mean", rng: np.random.Generator | None = None) -> Estimate:
    """Percentile bootstrap CI of the mean (or median) of ``samples``, taken as independent draws; the value
    is the statistic of the samples themselves."""
    _check(confidence, resamples)
    x = _sample(samples, "samples")
    gen = rng if rng is not None else np.random.default_rng()
    if statistic == "mean":
        value = float(np.mean(x))
        boot = _resample_sums(x, resamples, gen) / len(x)
    elif statistic == "median":
        value = float(np.median(x))
        boot = _resample_medians(x, resamples, gen)
    else:
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    low, high = _interval(boot, confidence)
    return Estimate(value, low, high, confidence, f"plain bootstrap of the {statistic}")


def ratio_ci(a: np.ndarray | Sequence[np.ndarray], b: np.ndarray | Sequence[np.ndarray], *,
             confidence: float = 0.99, resamples: int = 10_000,
             rng: np.random.Generator | None = None) -> Estimate:
    """B's mean over A's, with a percentile bootstrap CI; each side resampled independently.

    A side given as one array is one group of independent iterations. A side given as a list of arrays
    (one per process execution) is resampled at two levels: process executions with replacement, then
    iterations within each, and its mean is the mean of the executions' means (each counts once).
    Process executions differ (layout, frequency, JIT decisions), so iterations pooled across them are
    not independent; resampling the executions makes the interval carry that spread instead of hiding it.
    """
    _check(confidence, resamples)
    gen = rng if rng is not None else np.random.default_rng()
    point_a, boot_a = _group_means(a, "a", resamples, gen)
    point_b, boot_b = _group_means(b, "b", resamples, gen)
    if point_a == 0.0:
        raise ValueError("ratio_ci(): mean(a) is 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_b / boot_a
    low, high = _interval(ratios, confidence)
    method = "bootstrap ratio of means" if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) else \
        "two-level bootstrap ratio (executions, then iterations)"
    return Estimate(point_b / point_a, low, high, confidence, method)


def _group_means(side: np.ndarray | Sequence[np.ndarray], name: str, resamples: int,
                 gen: np.random.Generator) -> tuple[float, np.ndarray]:
    """The side's point mean and `resamples` bootstrap replicates of it."""
    if isinstance(side, np.ndarray):
        x = _sample(side, name)
        return float(np.mean(x)), _resample_sums(x, resamples, gen) / len(x)
    groups = [_sample(g, f"{name}[{i}]") for i, g in enumerate(side)]
    if not groups:
        raise ValueError(f"{name} has no process executions")
    # inner[j, r]: execution j's r-th resampled mean; each replicate picks k executions with replacement.
    inner = np.stack([_resample_sums(g, resamples, gen) / len(g) for g in groups])
    picks = gen.integers(0, len(groups), size=(resamples, len(groups)))
    boot = inner[picks, np.arange(resamples)[:, None]].mean(axis=1)
    return float(np.mean([np.mean(g) for g in groups])), boot


# --------------------------------------------------------------------------------------------------


def _check(confidence: float, resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")


def _sample(values: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if len(x) == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite values")
    return x


def _indices(n: int, rows: int, gen: np.random.Generator) -> np.ndarray:
    dtype = np.uint16 if n <= 1 << 16 else np.int64
    return gen.integers(0, n, size=(rows, n), dtype=dtype)


def _expanded_sums(x: np.ndarray, count: int, gen: np.random.Generator) -> np.ndarray | None:
    """Resample sums from the Cornish-Fisher expansion (see EXACT_MAX_N), or None where it does not hold."""
    n = len(x)
    mean = float(np.mean(x))
    d = x - mean
    d2 = d * d
    var = float(np.mean(d2))
    if var == 0.0:
        return np.full(count, n * mean)
    skew = float(np.dot(d2, d)) / n / var ** 1.5 / math.sqrt(n)
    kurt = (float(np.dot(d2, d2)) / n / var ** 2 - 3.0) / n
    if abs(skew) > MAX_SKEW or abs(kurt) > MAX_KURTOSIS:
        return None
    z = gen.standard_normal(count)
    z2 = z * z
    w = z + skew / 6 * (z2 - 1) + kurt / 24 * z * (z2 - 3) - skew * skew / 36 * z * (2 * z2 - 5)
    return n * mean + math.sqrt(n * var) * w


def _resample_sums(x: np.ndarray, count: int, gen: np.random.Generator) -> np.ndarray:
    """Sums of ``count`` bootstrap resamples of ``x`` (each ``len(x)`` draws with replacement)."""
    n = len(x)
    if n > EXACT_MAX_N:
        expanded = _expanded_sums(x, count, gen)
        if expanded is not None:
            return expanded
    out = np.empty(count)
    rows = max(1, _BLOCK_CELLS // n)
    for start in range(0, count, rows):
        stop = min(count, start + rows)
        out[start:stop] = x[_indices(n, stop - start, gen)].sum(axis=1)
    return out


def _resample_medians(x: np.ndarray, count: int, gen: np.random.Generator) -> np.ndarray:
    n = len(x)
    out = np.empty(count)
    rows = max(1, _BLOCK_CELLS // n)
    for start in range(0, count, rows):
        stop = min(count, start + rows)
        out[start:stop] = np.median(x[_indices(n, stop - start, gen)], axis=1)
    return out


def _interval(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    """Percentile interval of a bootstrap distribution with libkalibera's (and warmup_stats's) choice of
    order statistics: with L values sorted and e = (1 - confidence) / 2, the floor(e·L)-th and the
    (ceil((1 - e)·L) - 1)-th, 0-based. The level is read as the decimal it was written as (0.99 is 99/100),
    so that no binary rounding moves an index."""
    length = len(boot)
    level = Fraction(repr(float(confidence)))
    exclude = (1 - level) / 2
    lo = min(length - 1, math.floor(exclude * length))
    hi = max(lo, min(length - 1, math.ceil((1 - exclude) * length) - 1))
    part = np.partition(boot, (lo, hi))
    return float(part[lo]), float(part[hi])
