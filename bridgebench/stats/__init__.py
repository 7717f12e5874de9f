"""Statistics for benchmark results: outliers, changepoints, warm-up classification and bootstrap estimates,
after Barrett et al., "Virtual Machine Warmup Blows Hot and Cold" (OOPSLA 2017) and its warmup_stats tool.
Pure functions over numpy arrays; see docs/methodology.md."""

from bridgebench.stats.bootstrap import Estimate, plain_bootstrap, ratio_ci, steady_performance
from bridgebench.stats.changepoints import backend, changepoints, default_penalty
from bridgebench.stats.classify import (
    BAD_INCONSISTENT,
    FLAT,
    GOOD_INCONSISTENT,
    KINDS,
    MIN_ITERATIONS_FOR_CHANGEPOINTS,
    NO_STEADY_STATE,
    SLOWDOWN,
    WARMUP,
    ExecutionClass,
    Segment,
    classify_benchmark,
    classify_execution,
    too_short_for_changepoints,
)
from bridgebench.stats.outliers import outlier_mask
from bridgebench.stats.summary import BenchmarkSummary, Spread, summarise

__all__ = [
    "BAD_INCONSISTENT",
    "FLAT",
    "GOOD_INCONSISTENT",
    "KINDS",
    "MIN_ITERATIONS_FOR_CHANGEPOINTS",
    "NO_STEADY_STATE",
    "SLOWDOWN",
    "WARMUP",
    "BenchmarkSummary",
    "Estimate",
    "ExecutionClass",
    "Segment",
    "Spread",
    "backend",
    "changepoints",
    "classify_benchmark",
    "classify_execution",
    "default_penalty",
    "outlier_mask",
    "plain_bootstrap",
    "ratio_ci",
    "steady_performance",
    "summarise",
    "too_short_for_changepoints",
]
