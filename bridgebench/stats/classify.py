"""Classification of process executions (flat, warm-up, slowdown, no steady state) and of benchmarks.

The rules are warmup_stats's (Barrett et al. 2017, as implemented in its ``mark_changepoints_in_json`` and
``summary_statistics``); docs/methodology.md says where and why we differ.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridgebench.stats.changepoints import changepoints
from bridgebench.stats.outliers import outlier_mask

__all__ = [
    "BAD_INCONSISTENT",
    "FLAT",
    "GOOD_INCONSISTENT",
    "KINDS",
    "MIN_ITERATIONS_FOR_CHANGEPOINTS",
    "NO_STEADY_STATE",
    "SLOWDOWN",
    "WARMUP",
    "ExecutionClass",
    "Segment",
    "classify_benchmark",
    "classify_execution",
    "too_short_for_changepoints",
]

FLAT = "flat"
WARMUP = "warmup"
SLOWDOWN = "slowdown"
NO_STEADY_STATE = "no steady state"
KINDS = (FLAT, WARMUP, SLOWDOWN, NO_STEADY_STATE)
GOOD_INCONSISTENT = "good inconsistent"
BAD_INCONSISTENT = "bad inconsistent"

RULES_VERSION = "2026-11-23"
"""Names the rules classify_execution applies (outliers, changepoints, equivalence, the window): a stored
classification made under another version is made again (analysis.py caches them per execution). Change
it with any change to those rules."""

# Segment means closer than this share of the fastest one are the same performance (methodology §3); a
# machine calibrated with `bridgebench calibrate` judges its campaigns with its own instead.
DEFAULT_DELTA_RELATIVE = 0.01

MIN_ITERATIONS_FOR_CHANGEPOINTS = 50
"""Below this many in-process iterations we do not look for changepoints (see docs/methodology.md): with
the 15·log(n) penalty, a shift affecting a fifth of a 50-iteration series must already be 3.7 standard
deviations to be found, and the last quarter, where a steady state must have been reached, is 12
iterations."""


@dataclass(frozen=True)
class Segment:
    """Iterations ``[start, end)`` of the original series between two changepoints; ``mean`` and ``var`` are
    those of its non-outlier iterations (``var`` divides by the segment's length m: the maximum-likelihood
    variance that the pinned R changepoint package reports to warmup_stats)."""

    start: int
    end: int
    mean: float
    var: float


@dataclass(frozen=True)
class ExecutionClass:
    kind: str
    segments: tuple[Segment, ...]
    steady_segments: tuple[Segment, ...]
    steady_iteration: int | None
    steady_seconds: float | None
    outliers: np.ndarray = field(compare=False, repr=False)


def to_record(cls: ExecutionClass) -> dict[str, Any]:
    """The classification as plain data (JSON), to store beside its execution; from_record reads it back."""
    return {"kind": cls.kind, "segments": [[s.start, s.end, s.mean, s.var] for s in cls.segments],
            "first_steady": len(cls.segments) - len(cls.steady_segments) if cls.steady_segments else None,
            "steady_iteration": cls.steady_iteration, "steady_seconds": cls.steady_seconds,
            "outliers": [int(i) for i in np.flatnonzero(cls.outliers)], "n": len(cls.outliers)}


def from_record(record: dict[str, Any]) -> ExecutionClass:
    segments = tuple(Segment(int(a), int(b), float(m), float(v)) for a, b, m, v in record["segments"])
    first = record["first_steady"]
    mask = np.zeros(record["n"], dtype=bool)
    mask[record["outliers"]] = True
    mask.setflags(write=False)
    return ExecutionClass(record["kind"], segments, segments[first:] if first is not None else (),
                          record["steady_iteration"], record["steady_seconds"], mask)


def too_short_for_changepoints(n: int) -> bool:
    """True when a series of ``n`` iterations is too short for the changepoint analysis to mean anything
    (fewer than MIN_ITERATIONS_FOR_CHANGEPOINTS = 50)."""
    return n < MIN_ITERATIONS_FOR_CHANGEPOINTS


def classify_execution(times: np.ndarray, *, window: int | None = None, steady_fraction: float = 0.25,
                       delta: float = 0.0, delta_relative: float = DEFAULT_DELTA_RELATIVE,
                       quantum: float | None = None) -> ExecutionClass:
    """Segment one process execution's iteration times and classify it.

    Outliers (``outlier_mask(times, window)``) are left out of the changepoint analysis and of the segments'
    means and variances. A segment is *equivalent* to the last one when the intervals ``mean ± var`` (its
    own) and ``last.mean ± max(last.var, δ)`` overlap, where δ = max(``delta``, ``delta_relative`` × the
    fastest segment's mean), in seconds; ``var`` is used as a width in seconds exactly as warmup_stats does.
    The steady state is the last segment and the run of equivalent segments right before it. Walking back
    from the second-to-last segment, equivalent segments are skipped; the first non-equivalent one means
    *no steady state* if it ends within the last ``steady_fraction`` of the iterations, *slowdown* if it is
    faster; otherwise it is slower and the execution is a *warm-up* unless an earlier non-equivalent
    segment is faster (then *slowdown*). No non-equivalent segment: *flat*. ``quantum``: the values' known
    resolution, for the changepoint search (changepoints(); instruction counts).
    """
    x = np.asarray(times, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError("classify_execution() needs a non-empty 1-d series")
    if not np.all(np.isfinite(x)):
        raise ValueError("classify_execution() needs finite times")
    if not 0.0 <= steady_fraction <= 1.0:
        raise ValueError(f"steady_fraction must be in [0, 1], got {steady_fraction}")
    if delta < 0 or delta_relative < 0:
        raise ValueError("delta and delta_relative must be >= 0")
    n = len(x)
    mask = outlier_mask(x, window)
    keep = np.flatnonzero(~mask)
    if len(keep) == 0:  # cannot happen with the windowed rule, but never leave nothing to analyse
        mask = np.zeros(n, dtype=bool)
        keep = np.arange(n)
    mask.setflags(write=False)
    kept = x[keep]
    bounds = [0, *changepoints(kept, quantum=quantum), len(kept)]
    segments = []
    for a, b in itertools.pairwise(bounds):
        # A segment owns the outliers between the previous segment's last kept iteration and its own last
        # one, so the segments tile [0, n): outliers just before a changepoint go to the later segment, as
        # in warmup_stats.
        start = 0 if a == 0 else int(keep[a - 1]) + 1
        end = n if b == len(kept) else int(keep[b - 1]) + 1
        values = kept[a:b]
        var = float(np.var(values))  # ÷ m: the maximum-likelihood variance the changepoint model fits
        segments.append(Segment(start, end, float(np.mean(values)), var))

    last = segments[-1]
    tolerance = max(delta, delta_relative * min(s.mean for s in segments))
    lower = last.mean - max(last.var, tolerance)
    upper = last.mean + max(last.var, tolerance)

    def equivalent(seg: Segment) -> bool:
        return seg.mean + seg.var >= lower and seg.mean - seg.var <= upper

    first_steady = len(segments) - 1
    while first_steady > 0 and equivalent(segments[first_steady - 1]):
        first_steady -= 1

    # warmup_stats's test, to the letter: steady = int(f·n), and a segment whose last (0-based) index is
    # above n - steady ends inside the window; in our exclusive ends, end - 1 > n - steady.
    window_start = n - int(steady_fraction * n) + 1
    kind = FLAT
    for seg in reversed(segments[:-1]):
        if equivalent(seg):
            continue
        if seg.end > window_start:
            kind = NO_STEADY_STATE
            break
        if seg.mean - seg.var < lower:
            kind = SLOWDOWN
            break
        kind = WARMUP  # slower; an earlier, faster segment still makes it a slowdown

    if kind == NO_STEADY_STATE:
        return ExecutionClass(kind, tuple(segments), (), None, None, mask)
    steady = tuple(segments[first_steady:])
    start = steady[0].start
    return ExecutionClass(kind, tuple(segments), steady, start + 1, float(np.sum(x[:start])), mask)


def classify_benchmark(kinds: Sequence[str]) -> str:
    """One class for a benchmark from its executions' classes: the common class if they all agree,
    "good inconsistent" if they are a mix of flat and warm-up only, "bad inconsistent" otherwise."""
    if len(kinds) == 0:
        raise ValueError("classify_benchmark() needs at least one execution's class")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown execution classes: {sorted(unknown)}")
    distinct = set(kinds)
    if len(distinct) == 1:
        return kinds[0]
    if distinct <= {FLAT, WARMUP}:
        return GOOD_INCONSISTENT
    return BAD_INCONSISTENT
