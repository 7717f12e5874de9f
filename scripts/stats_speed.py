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


def changepoint_speed(x: np.ndarray, backend: str) -> None:
    """Time the changepoint search on a series without changepoints, and the plain PELT search beside it
    (the same answer, without setting starts aside)."""
    n = len(x)
    print(f"changepoints, n={n}, no changepoint ({backend}): {best_of(5, lambda: changepoints(x)) * 1e3:.1f} ms")
    module = importlib.import_module("bridgebench.stats.changepoints")
    lib = module._load_c()
    if lib is not None:
        s1, s2, vfloor = module._prepare(x)
        pen = module.default_penalty(n)
        plain = best_of(5, lambda: module._pelt_c(lib, s1, s2, n, 2, pen, vfloor, set_aside=False))
        print(f"  the plain search (c): {plain * 1e3:.1f} ms")


def main() -> None:
    rng = np.random.default_rng(1)
    flat = rng.normal(0.01, 1e-4, 2000)  # no changepoint: PELT cannot prune, its worst case
    backend = importlib.import_module("bridgebench.stats.changepoints").backend()
    for n in (2000, 6250):
        changepoint_speed(rng.normal(0.01, 1e-4, n), backend)
    print(f"classify_execution, n=2000 ({backend}): {best_of(5, lambda: classify_execution(flat)) * 1e3:.1f} ms")
    long_flat = rng.normal(0.01, 1e-4, 6250)
    print(f"classify_execution, n=6250 ({backend}): {best_of(5, lambda: classify_execution(long_flat)) * 1e3:.1f} ms")
    runs = [(x, classify_execution(x)) for x in (rng.normal(0.01, 1e-4, 2000) for _ in range(15))]
    print("steady_performance, 15 executions × 2000 iterations, 10,000 resamples: "
          f"{best_of(3, lambda: steady_performance(runs, rng=rng)) * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
