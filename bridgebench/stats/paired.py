"""The ratio of two cells that ran interleaved, paired by round.

In an interleaved campaign, round r of mechanism A and round r of mechanism B run minutes apart at most,
and a shared machine's speed drifts over minutes (docs/methodology.md §6 measures it): what a round shares
moves both sides together. Pairing the rounds takes that out of the ratio. The interval is Student's t on
the rounds' log ratios, not a bootstrap: with the few rounds a campaign affords, a bootstrap over k paired
rounds covers its ratio far less often than it claims (about 74 % for a "99 %" interval at k = 3, 90 % at
k = 5, in the simulations of tests/test_stats_paired.py), while t's k - 1 degrees of freedom make the
interval as wide as k rounds can justify.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bridgebench.stats.bootstrap import Estimate
from bridgebench.stats.executions import t_quantile

PAIRED_METHOD = "paired by round: Student's t on the rounds' log ratios"


def paired_ratio(a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, confidence: float = 0.99) -> Estimate:
    """B over A from rounds: a[i] and b[i] are the steady iterations of the two sides' executions in the same
    round. The estimate is the geometric mean of the rounds' ratios of means; the interval is
    exp(mean ± t · sd / √k) over the k rounds' log ratios."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("paired_ratio() needs the same rounds on both sides, at least two")
    logs = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        mean_a, mean_b = float(np.mean(x)), float(np.mean(y))
        if not (mean_a > 0 and mean_b > 0 and math.isfinite(mean_a) and math.isfinite(mean_b)):
            raise ValueError(f"paired_ratio(): round {i} has a mean that is not a positive number")
        logs.append(math.log(mean_b / mean_a))
    k = len(logs)
    centre = float(np.mean(logs))
    half = t_quantile((1 + confidence) / 2, k - 1) * float(np.std(logs, ddof=1)) / math.sqrt(k)
    return Estimate(math.exp(centre), math.exp(centre - half), math.exp(centre + half), confidence, PAIRED_METHOD,
                    k)
