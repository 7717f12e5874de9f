"""One benchmark's summary over its process executions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bridgebench.stats.bootstrap import Estimate, plain_bootstrap, steady_performance
from bridgebench.stats.classify import (
    FLAT,
    KINDS,
    WARMUP,
    ExecutionClass,
    classify_benchmark,
    classify_execution,
    too_short_for_changepoints,
)
from bridgebench.stats.executions import over_executions
from bridgebench.stats.outliers import outlier_mask

__all__ = ["CHANGEPOINTS_METHOD", "NOT_CLASSIFIED", "PLAIN_METHOD", "BenchmarkSummary", "Spread", "summarise",
           "unclassified_outliers", "unclassified_start", "warmup_length"]

# How a cell's steady state was found (the report's "steady state:"); its intervals are over executions either way.
CHANGEPOINTS_METHOD = "changepoints"
PLAIN_METHOD = "not classified (too few iterations for changepoints): each execution's iterations after its first"
NOT_CLASSIFIED = "n/a"


@dataclass(frozen=True)
class Spread:
    """The median over process executions, with their 5th and 95th percentiles."""

    median: float
    p5: float
    p95: float


@dataclass(frozen=True)
class BenchmarkSummary:
    classification: str
    class_counts: dict[str, int]
    steady_iteration: Spread | None
    steady_seconds: Spread | None
    steady_performance: Estimate | None  # over process executions: their steady means (stats.executions)
    method: str
    steady_bootstrap: Estimate | None = None  # within processes (warmup_stats's bootstrap): secondary


def warmup_length(classes: Sequence[ExecutionClass | None]) -> int | None:
    """How many iterations the classified executions of a cell took to warm up: the latest steady iteration
    among those that were flat or warmed up (a slowdown's steady state is not the end of a warm-up), less
    one. None when none of them is classified. An execution of the cell too short to classify starts its
    steady state there (a campaign's later, shorter executions: TimingOptions.later_share)."""
    reached = [c.steady_iteration for c in classes
               if c is not None and c.kind in (FLAT, WARMUP) and c.steady_iteration is not None]
    if not reached and not any(c is not None for c in classes):
        return None
    return max(reached, default=1) - 1


def unclassified_start(warmup: int | None, n: int) -> int:
    """Where the steady iterations of an execution too short to classify start, of its `n`: after its cell's
    warm-up (warmup_length) when some execution of the cell is classified; otherwise after its first
    iteration, when two or more are left. A fresh process's first iteration pays for what its later ones
    reuse (cold caches and branch predictors, pages touched for the first time, a heap not yet grown to its
    working size: PUC Lua's first binarytrees iteration is 16 % faster than the next, its first havlak one
    10 % slower), and pyperf drops each worker's first value for the same reason."""
    if warmup is not None:
        return min(warmup, n)
    return 1 if n >= 3 else 0


def unclassified_outliers(x: np.ndarray, skip: int, window: int | None = None) -> np.ndarray:
    """The outliers of an execution too short to classify, found among its iterations from `skip` on (its
    cell's warm-up length, warmup_length); its first `skip` are not steady, so none of them is one."""
    mask = np.zeros(len(x), dtype=bool)
    if len(x) > skip:
        mask[skip:] = outlier_mask(x[skip:], window)
    return mask


def execution_means(arrays: Sequence[np.ndarray], classes: Sequence[ExecutionClass | None],
                    window: int | None = None) -> list[float]:
    """Each process execution's one number: the mean of its steady iterations without outliers (an
    execution with no steady state has none), or, unclassified (too short for changepoints), of its
    iterations without outliers from where unclassified_start says."""
    means = []
    warmup = warmup_length(classes)
    for x, cls in zip(arrays, classes, strict=True):
        if cls is None:
            skip = unclassified_start(warmup, len(x))
            kept = x[skip:][~unclassified_outliers(x, skip, window)[skip:]]
        else:
            mask = np.zeros(len(x), dtype=bool)
            for seg in cls.steady_segments:
                mask[seg.start:seg.end] = True
            kept = x[mask & ~cls.outliers]
        if len(kept):
            means.append(float(np.mean(kept)))
    return means


def summarise(series: Sequence[np.ndarray], *, confidence: float = 0.99,
              rng: np.random.Generator | None = None,
              classes: Sequence[ExecutionClass | None] | None = None,
              bootstrap: bool = True,
              **classify_kwargs: Any) -> BenchmarkSummary:
    """Summarise one benchmark from its process executions' iteration times.

    Each execution is classified (``classify_execution(times, **classify_kwargs)``), unless the caller
    passes its classification in ``classes`` (one per series, None to have it computed here; they must come
    from ``classify_execution`` of the same series with the same options). With ``bootstrap=False`` the
    secondary within-process bootstrap (the costliest part) is left out. The benchmark's class
    comes from ``classify_benchmark``; ``class_counts`` has all four kinds. The steady iteration and the
    seconds before the steady state are summarised over the executions that reached one (flat ones count
    as iteration 1, 0 s). Steady performance is over process executions (``over_executions`` of their
    ``execution_means``: no interval below 3); warmup_stats's bootstrap within the steady segments,
    ``steady_performance``, is kept beside it as ``steady_bootstrap``.

    If every series is too short for changepoints (``too_short_for_changepoints``), nothing is classified
    (classification "n/a", no counts), each execution's number is the mean of its non-outlier iterations
    after its first (unclassified_start), and the secondary figure is a plain bootstrap of all of those;
    ``method`` says which was done. When only
    some are (a campaign's later executions, shortened), the class, its counts and the secondary figure come
    from the classified ones, and the short ones' numbers start after the cell's warm-up (warmup_length).
    """
    arrays = [np.asarray(s, dtype=np.float64) for s in series]
    if not arrays or any(a.ndim != 1 or len(a) == 0 for a in arrays):
        raise ValueError("summarise() needs at least one series, each a non-empty 1-d array")
    given = list(classes) if classes is not None else [None] * len(arrays)
    if len(given) != len(arrays):
        raise ValueError(f"summarise(): {len(given)} classes for {len(arrays)} series")
    window = classify_kwargs.get("window")
    if all(too_short_for_changepoints(len(a)) for a in arrays):
        steady = [a[unclassified_start(None, len(a)):] for a in arrays]
        pooled = np.concatenate([a[~outlier_mask(a, window)] for a in steady])
        within = plain_bootstrap(pooled, confidence=confidence, rng=rng) if bootstrap else None
        over = over_executions(execution_means(arrays, [None] * len(arrays), window), confidence=confidence)
        return BenchmarkSummary(NOT_CLASSIFIED, {}, None, None, over, PLAIN_METHOD, within)

    done = [None if too_short_for_changepoints(len(a)) else c if c is not None
            else classify_execution(a, **classify_kwargs) for a, c in zip(arrays, given, strict=True)]
    classified = [(a, c) for a, c in zip(arrays, done, strict=True) if c is not None]
    kinds = [c.kind for _, c in classified]
    counts = {kind: kinds.count(kind) for kind in KINDS}
    steady = [c for _, c in classified if c.steady_iteration is not None]
    iteration = _spread([float(c.steady_iteration) for c in steady if c.steady_iteration is not None])
    seconds = _spread([c.steady_seconds for c in steady if c.steady_seconds is not None])
    within = steady_performance(classified, confidence=confidence, rng=rng) if bootstrap else None
    over = over_executions(execution_means(arrays, done, window), confidence=confidence)
    return BenchmarkSummary(classify_benchmark(kinds), counts, iteration, seconds, over, CHANGEPOINTS_METHOD,
                            within)


def _spread(values: list[float]) -> Spread | None:
    if not values:
        return None
    p5, median, p95 = np.percentile(values, [5.0, 50.0, 95.0])
    return Spread(float(median), float(p5), float(p95))
