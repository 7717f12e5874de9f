"""Intervals whose unit is the process execution.

Processes of one VM differ (memory layout, JIT decisions, the host's drift) by more than the iterations
inside one process do, so an interval that claims to say how fast a mechanism is, or whether A beats B,
must be computed over process executions: each execution contributes one number (its steady mean, a load
run's rate or percentile), and the interval is Student's t over those numbers. With fewer than
MIN_EXECUTIONS numbers there is an estimate and no interval: two values say nothing about the spread that
the next process execution could show, and intervals from within-process resampling of one or two
executions cover far less often than they claim (docs/methodology.md §6 measures both).

Times and rates are positive and their spread grows with their size, so by default the numbers are taken
on the log scale: the estimate is their geometric mean, the interval exp(mean ± t·sd/√k) of the logs, and a
ratio is Welch's t on the difference of the two sides' mean logs. `scale="linear"` takes them as they are
(an arithmetic mean with its t interval), as load campaigns report their latency percentiles.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from bridgebench.stats.bootstrap import Estimate

__all__ = ["MIN_EXECUTIONS", "TOO_FEW", "each_look", "over_executions", "ratio_over_executions", "too_few"]

MIN_EXECUTIONS = 3
TOO_FEW = "too few process executions for an interval"
MEAN_LOG_METHOD = "Student's t over process executions (log scale)"
MEAN_LINEAR_METHOD = "Student's t over process executions"
RATIO_METHOD = "Welch's t over process executions (log scale)"


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile; scipy is imported on first use (importing it costs the CLI ~0.8 s to start).
    Cached: an adaptive campaign asks for the same few (confidence, blocks) pairs thousands of times."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(p, df))


def too_few(k: int | None, needed: int = MIN_EXECUTIONS) -> str:
    """Why an estimate has no interval, with the count, for messages (the estimate's method is TOO_FEW)."""
    return f"{TOO_FEW} ({k if k is not None else '?'} of the {needed} needed)"


def each_look(confidence: float, looks: int) -> float:
    """The confidence each of `looks` intervals needs so that all of them hold together with `confidence`
    (Bonferroni): an interval looked at after every round of a budget that stops when it decides is a
    `confidence` interval at whichever look it stopped, while a plain one at `confidence` is not."""
    _check(confidence)
    if looks < 1:
        raise ValueError(f"looks must be at least 1, got {looks}")
    return 1 - (1 - confidence) / looks


def _check(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _values(values: Sequence[float], positive: bool, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(x)) or (positive and np.any(x <= 0)):
        raise ValueError(f"{name}: every value must be a finite{' positive' if positive else ''} number")
    return x


def over_executions(values: Sequence[float], *, confidence: float = 0.99,
                    scale: Literal["log", "linear"] = "log", min_executions: int = MIN_EXECUTIONS
                    ) -> Estimate | None:
    """One number per process execution -> their mean with a Student-t interval (from `min_executions` of
    them); None for no numbers."""
    _check(confidence)
    x = _values(values, scale == "log", "over_executions()")
    k = len(x)
    if k == 0:
        return None
    y = np.log(x) if scale == "log" else x
    centre = float(np.mean(y))
    back = math.exp if scale == "log" else float
    if k < max(min_executions, 2):
        return Estimate(back(centre), None, None, confidence, TOO_FEW, k)
    half = t_quantile((1 + confidence) / 2, k - 1) * float(np.std(y, ddof=1)) / math.sqrt(k)
    return Estimate(back(centre), back(centre - half), back(centre + half), confidence,
                    MEAN_LOG_METHOD if scale == "log" else MEAN_LINEAR_METHOD, k)


def ratio_over_executions(a: Sequence[float], b: Sequence[float], *, confidence: float = 0.99,
                          min_executions: int = MIN_EXECUTIONS) -> Estimate:
    """B over A from one positive number per process execution a side (independent executions): the ratio
    of their geometric means, with Welch's t interval on the difference of mean logs. No interval when
    either side has fewer than MIN_EXECUTIONS."""
    _check(confidence)
    la = np.log(_values(a, True, "ratio_over_executions(a)"))
    lb = np.log(_values(b, True, "ratio_over_executions(b)"))
    if len(la) == 0 or len(lb) == 0:
        raise ValueError("ratio_over_executions() needs at least one value a side")
    diff = float(np.mean(lb) - np.mean(la))
    k = min(len(la), len(lb))
    if k < max(min_executions, 2):
        return Estimate(math.exp(diff), None, None, confidence, TOO_FEW, k)
    va, vb = float(np.var(la, ddof=1)) / len(la), float(np.var(lb, ddof=1)) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0.0:
        return Estimate(math.exp(diff), math.exp(diff), math.exp(diff), confidence, RATIO_METHOD, k)
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    half = t_quantile((1 + confidence) / 2, df) * se
    return Estimate(math.exp(diff), math.exp(diff - half), math.exp(diff + half), confidence, RATIO_METHOD, k)
