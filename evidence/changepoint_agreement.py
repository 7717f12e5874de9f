"""Do the two changepoint searches agree on many more series than the tests try? A check of the method, not
a test (tests/test_stats_changepoints.py runs a part of it on every CI run).

    .venv/bin/python evidence/changepoint_agreement.py [--series 3000] [--seed 0]

For each series (one of SHAPES below, which tests/test_stats_changepoints.py tries too, at a random length up
to 6250, and a random minimum segment and penalty half the time) the plain PELT search and the one that sets
starts aside (stats/_pelt.c) must give the same changepoints and every prefix's optimal cost to the last bit. Prints how
many series agreed and the cost evaluations each search made.
"""

from __future__ import annotations

import argparse
import importlib

import numpy as np

from bridgebench.stats.changepoints import default_penalty

# The package re-exports the function changepoints(), which hides the module of the same name.
cp_module = importlib.import_module("bridgebench.stats.changepoints")

def planted(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """A series of one of the shapes timing data takes, in seconds."""
    x = rng.normal(1e-3, 1e-5, n)
    if kind == "one step":
        x[int(rng.integers(1, n)):] += rng.choice([-1, 1]) * rng.uniform(0.5e-5, 5e-5)
    elif kind == "many steps":
        for start in np.sort(rng.integers(1, n, int(rng.integers(2, 8)))):
            x[start:] = 1e-3 + (x[start:] - 1e-3) * rng.uniform(0.3, 3.0) + rng.normal(0.0, 2e-5)
    elif kind == "warm-up":
        x[:int(rng.integers(5, max(n // 4, 6)))] *= rng.uniform(1.5, 4.0)
    elif kind == "noisy":
        x = 1e-3 + rng.standard_exponential(n) * 2e-5 + (rng.random(n) < 0.02) * 1e-4
    elif kind == "quantised":
        x = np.round(rng.normal(100.0, rng.uniform(0.5, 4.0), n)) * 1e-6
    elif kind == "drift":
        x += np.linspace(0.0, rng.uniform(-3e-5, 3e-5), n)
    elif kind == "coarse":  # a coarse timer: long runs of one value, where the variance floor decides
        x = np.round(rng.normal(100.0, rng.uniform(0.1, 0.6), n))
        start = int(rng.integers(1, n))
        x[start:] = np.round(rng.normal(100.0, rng.uniform(0.05, 1.0), n - start))
        x[0] += 1.0  # never constant
    return x


def both_searches(x: np.ndarray, min_size: int, penalty: float) -> tuple[list[int], list[int], list[int]]:
    """Changepoints of the plain search and of the one that sets starts aside, after checking that every
    prefix's optimal cost is the same to the last bit; and the two searches' numbers of cost evaluations."""
    lib = cp_module._load_c()
    prepared = cp_module._prepare(x)
    assert lib is not None and prepared is not None
    s1, s2, vfloor = prepared
    n = len(x)
    costs = [np.full(n + 1, np.nan), np.full(n + 1, np.nan)]
    evaluations: list[int] = []
    plain = cp_module._pelt_c(lib, s1, s2, n, min_size, penalty, vfloor, f=costs[0], set_aside=False,
                              evaluations=evaluations)
    fast = cp_module._pelt_c(lib, s1, s2, n, min_size, penalty, vfloor, f=costs[1], evaluations=evaluations)
    if n >= 2 * min_size:  # else there is nothing to search
        defined = np.r_[0, min_size:n + 1]
        assert np.array_equal(costs[0][defined], costs[1][defined])
    return plain, fast, evaluations


SHAPES = ["flat", "one step", "many steps", "warm-up", "noisy", "quantised", "drift", "coarse"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    agreed = plain_work = fast_work = 0
    for _ in range(args.series):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        n = int(rng.integers(4, 6251))
        x = planted(shape, n, rng)
        min_size, penalty = ((2, default_penalty(n)) if rng.random() < 0.5
                             else (int(rng.integers(2, 6)), float(rng.uniform(0, 40))))
        try:
            plain, fast, (plain_evals, fast_evals) = both_searches(x, min_size, penalty)
        except AssertionError:  # the prefix costs differ
            print(f"DISAGREE (costs): {shape}, n={n}, min_size={min_size}, penalty={penalty:g}")
            continue
        if plain != fast:
            print(f"DISAGREE (changepoints): {shape}, n={n}, min_size={min_size}, penalty={penalty:g}")
            continue
        agreed += 1
        plain_work += plain_evals
        fast_work += fast_evals
    print(f"{agreed} of {args.series} series agreed; cost evaluations: plain {plain_work:,}, with starts set aside "
          f"{fast_work:,} ({fast_work / max(plain_work, 1):.1%})")


if __name__ == "__main__":
    main()
