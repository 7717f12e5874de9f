"""How far a cell's process executions lie apart, and what splits them: pure functions over per-execution
steady means (seconds, or any positive figure).

The spread is the standard deviation of the executions' log steady means (about their coefficient of
variation), with a chi-square interval: exact when the executions' logs are normal; with speed modes they
are not, and the interval is then a rough guide (tests/test_stats_spread.py measures both). Two spreads are
compared by the ratio of their standard deviations with an F interval, under the same assumption. Speed
*modes* are groups of executions whose speeds lie apart by a gap that is large against the spread inside
the groups;
whether a trace signature *predicts* an execution's mode is judged leaving that execution out, so that a
signature seen once predicts nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from types import ModuleType

import numpy as np

MIN_EXECUTIONS = 3  # an interval on a spread needs at least this many executions
MODE_SEPARATION = 4.0  # modes' means at least this many within-mode standard deviations apart
MODE_MIN_SHIFT = 0.03  # and at least 3 % apart: this host's own steps between executions reach a few %
MODE_MIN_SIZE = 2  # a mode is at least two executions: one stray execution is not a mode


@dataclass(frozen=True)
class SpreadEstimate:
    executions: int
    sd: float  # of the log steady means: about the coefficient of variation
    low: float
    high: float
    confidence: float


@dataclass(frozen=True)
class SpreadRatio:
    """The spread of B over the spread of A (standard deviations), with its interval."""

    ratio: float
    low: float
    high: float
    confidence: float

    def verdict(self) -> str:
        if self.high < 1:
            return "fell"
        if self.low > 1:
            return "rose"
        return "undecided"


def _sps() -> ModuleType:
    """scipy.stats, imported on first use (importing it costs the CLI ~0.8 s to start)."""
    from scipy import stats

    return stats


def _logs(means: list[float]) -> np.ndarray:
    values = np.asarray(means, dtype=float)
    if np.any(~np.isfinite(values)) or np.any(values <= 0):
        raise ValueError("steady means must be positive and finite")
    return np.log(values)


def log_spread(means: list[float], confidence: float = 0.99) -> SpreadEstimate | None:
    """The standard deviation of the log means with a chi-square interval; None below MIN_EXECUTIONS."""
    if len(means) < MIN_EXECUTIONS:
        return None
    logs = _logs(means)
    n = len(logs)
    sd = float(np.std(logs, ddof=1))
    low, high = sd_bounds(sd, n, confidence)
    return SpreadEstimate(n, sd, low, high, confidence)


def sd_bounds(sd: float, n: int, confidence: float = 0.99) -> tuple[float, float]:
    """The chi-square interval of a standard deviation estimated from n normal values (n - 1 degrees of freedom)."""
    alpha = 1 - confidence
    return (sd * math.sqrt((n - 1) / _sps().chi2.ppf(1 - alpha / 2, n - 1)),
            sd * math.sqrt((n - 1) / _sps().chi2.ppf(alpha / 2, n - 1)))


def spread_ratio(a: list[float], b: list[float], confidence: float = 0.99) -> SpreadRatio | None:
    """sd(B) / sd(A) of the log means with the F interval; None when a side is short or has no spread."""
    if len(a) < MIN_EXECUTIONS or len(b) < MIN_EXECUTIONS:
        return None
    va, vb = float(np.var(_logs(a), ddof=1)), float(np.var(_logs(b), ddof=1))
    if va == 0 or vb == 0:
        return None
    alpha = 1 - confidence
    f = vb / va
    dfb, dfa = len(b) - 1, len(a) - 1
    low = f / _sps().f.ppf(1 - alpha / 2, dfb, dfa)
    high = f / _sps().f.ppf(alpha / 2, dfb, dfa)
    return SpreadRatio(math.sqrt(f), math.sqrt(low), math.sqrt(high), confidence)


@dataclass(frozen=True)
class Between:
    """How much of the spread lies between groups (one-way analysis of variance on the logs)."""

    groups: int
    executions: int
    share: float  # η²: between-group sum of squares over the total
    p_value: float  # the F test's: how often groups drawn from one population would differ this much


def between_groups(groups: list[list[float]]) -> Between | None:
    """None unless there are two groups or more and some group has two executions (else no within spread)."""
    kept = [_logs(g) for g in groups if len(g) > 0]
    n = sum(len(g) for g in kept)
    if len(kept) < 2 or n <= len(kept):
        return None
    every = np.concatenate(kept)
    total = float(np.sum((every - every.mean()) ** 2))
    if total == 0:
        return Between(len(kept), n, 0.0, 1.0)
    between = float(sum(len(g) * (g.mean() - every.mean()) ** 2 for g in kept))
    within = total - between
    dfb, dfw = len(kept) - 1, n - len(kept)
    p = 0.0 if within <= 0 else float(_sps().f.sf((between / dfb) / (within / dfw), dfb, dfw))
    return Between(len(kept), n, between / total, p)


def modes(means: list[float]) -> list[int]:
    """A mode label (0 = the fastest mode) for each execution, in the order given. The sorted log means are cut
    at every gap of MODE_MIN_SHIFT or more; then, while some cut leaves a group smaller than MODE_MIN_SIZE or
    separates two groups whose means lie less than MODE_SEPARATION pooled standard deviations apart (of those
    two groups), the narrowest such gap is closed."""
    logs = _logs(means)
    order = np.argsort(logs, kind="stable")
    xs = logs[order]
    gaps = np.diff(xs)
    cuts = [i + 1 for i, g in enumerate(gaps) if g >= math.log1p(MODE_MIN_SHIFT)]
    while cuts:
        weak = [k for k in range(len(cuts)) if not _cut_stands(xs, cuts, k)]
        if not weak:
            break
        cuts.pop(min(weak, key=lambda k: gaps[cuts[k] - 1]))
    labels = np.zeros(len(xs), dtype=int)
    for mode, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(xs)], strict=True)):
        labels[order[start:end]] = mode
    return labels.tolist()


def _cut_stands(xs: np.ndarray, cuts: list[int], k: int) -> bool:
    bounds = [0, *cuts, len(xs)]
    left, right = xs[bounds[k]:bounds[k + 1]], xs[bounds[k + 1]:bounds[k + 2]]
    if len(left) < MODE_MIN_SIZE or len(right) < MODE_MIN_SIZE:
        return False
    within = float(np.sum((left - left.mean()) ** 2) + np.sum((right - right.mean()) ** 2))
    pooled = math.sqrt(within / (len(left) + len(right) - 2))
    return float(right.mean() - left.mean()) >= MODE_SEPARATION * pooled


@dataclass(frozen=True)
class Prediction:
    """Does an execution's trace signature tell its speed mode?"""

    executions: int
    modes: int
    predicted: int  # executions whose mode is the commonest among the *other* executions of their signature
    unmatched: int  # executions whose signature no other execution shares (predicted nothing)
    baseline: float  # the share right by always guessing the commonest mode

    @property
    def share(self) -> float:
        return self.predicted / self.executions


def predicted_by(signatures: list[str], labels: list[int]) -> Prediction | None:
    """Leave-one-out: each execution's mode guessed from the others with its signature (ties: the faster
    mode). None unless the executions fall into two modes or more."""
    if len(signatures) != len(labels):
        raise ValueError("one signature and one mode for each execution")
    if len(set(labels)) < 2:
        return None
    predicted = unmatched = 0
    for i, (sig, mode) in enumerate(zip(signatures, labels, strict=True)):
        others = Counter(m for j, (s, m) in enumerate(zip(signatures, labels, strict=True)) if j != i and s == sig)
        if not others:
            unmatched += 1
            continue
        top = max(others.values())
        predicted += min(m for m, c in others.items() if c == top) == mode
    baseline = max(Counter(labels).values()) / len(labels)
    return Prediction(len(labels), len(set(labels)), predicted, unmatched, baseline)
