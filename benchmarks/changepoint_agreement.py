"""Do the two changepoint searches agree on many more series than the tests try? A check of the method, not
a test (tests/test_stats_changepoints.py runs a part of it on every CI run).

    .venv/bin/python benchmarks/changepoint_agreement.py [--series 3000] [--seed 0]

For each series (a shape of tests/test_stats_changepoints.py's, at a random length up to 6250, and a random
minimum segment and penalty half the time) the plain PELT search and the one that sets starts aside
(stats/_pelt.c) must give the same changepoints and every prefix's optimal cost to the last bit. Prints how
many series agreed and the cost evaluations each search made.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridgebench.stats.changepoints import default_penalty
from tests.test_stats_changepoints import SHAPES, _both_searches, _planted


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
        x = _planted(shape, n, rng)
        min_size, penalty = ((2, default_penalty(n)) if rng.random() < 0.5
                             else (int(rng.integers(2, 6)), float(rng.uniform(0, 40))))
        try:
            plain, fast, (plain_evals, fast_evals) = _both_searches(x, min_size, penalty)
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
