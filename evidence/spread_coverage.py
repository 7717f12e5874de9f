"""How good bridgebench/stats/spread.py's methods are against planted truth (docs/methodology.md §12): the
99 % interval of the spread between executions (lognormal executions, and executions in two speed modes),
the interval of the ratio of two spreads, and how often modes are found where none were planted and missed
where they were. Seeded: the same figures on any machine.

    .venv/bin/python evidence/spread_coverage.py [--reps 4000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from bridgebench.stats import spread


def _interval(hits: int, reps: int) -> str:
    half = 2.576 * math.sqrt(max(hits, 1) * max(reps - hits, 1) / reps**3)
    return f"{hits / reps:.1%} (±{half:.1%})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    reps = args.reps
    print("| executions | spread interval covers: lognormal, sd 4 % | two modes 10 % apart, 1 in 4 slow "
          "| spread-ratio interval covers | unimodal (sd 1 %) split into modes | planted modes found |")
    print("|---|---|---|---|---|---|")
    shift, noise = math.log(1.10), 0.01
    for n in (3, 8, 15):
        normal = modal = ratio = false = found = 0
        mixed_sd = math.sqrt(noise**2 + 0.25 * 0.75 * shift**2)
        for _ in range(reps):
            est = spread.log_spread(list(np.exp(rng.normal(0, 0.04, n))))
            normal += est.low <= 0.04 <= est.high
            slow = rng.random(n) < 0.25
            est = spread.log_spread(list(np.exp(rng.normal(0, noise, n) + shift * slow)))
            modal += est.low <= mixed_sd <= est.high
            r = spread.spread_ratio(list(np.exp(rng.normal(0, 0.05, n))), list(np.exp(rng.normal(0, 0.02, n))))
            ratio += r.low <= 0.4 <= r.high
            false += len(set(spread.modes(list(np.exp(rng.normal(0, noise, n)))))) > 1
            k = max(2, n // 4)  # a slow mode of a quarter of the executions, 10 % slower
            planted = [0] * (n - k) + [1] * k
            labels = spread.modes(list(np.exp(rng.normal(0, noise, n) + shift * np.array(planted))))
            found += labels == planted
        print(f"| {n} | {_interval(normal, reps)} | {_interval(modal, reps)} | {_interval(ratio, reps)} | "
              f"{_interval(false, reps)} | {_interval(found, reps)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
