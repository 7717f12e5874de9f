"""How long the statistics take on this machine: a benchmark, not a test (docs/methodology.md quotes it).

    .venv/bin/python scripts/stats_speed.py                                  # the C changepoint kernel
    BRIDGEBENCH_PELT_BACKEND=numpy .venv/bin/python scripts/stats_speed.py   # the numpy fallback
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable

import numpy as np

from bridgebench.stats import changepoints, classify_execution, steady_performance


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """The fastest of a few runs: the least disturbed by the rest of a shared machine."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(1)
    flat = rng.normal(0.01, 1e-4, 2000)  # no changepoint: PELT cannot prune, its worst case
    backend = importlib.import_module("bridgebench.stats.changepoints").backend()
    print(f"changepoints, n=2000, no changepoint ({backend}): {best_of(5, lambda: changepoints(flat)) * 1e3:.1f} ms")
    print(f"classify_execution, n=2000 ({backend}): {best_of(5, lambda: classify_execution(flat)) * 1e3:.1f} ms")
    runs = [(x, classify_execution(x)) for x in (rng.normal(0.01, 1e-4, 2000) for _ in range(15))]
    print("steady_performance, 15 executions × 2000 iterations, 10,000 resamples: "
          f"{best_of(3, lambda: steady_performance(runs, rng=rng)) * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
