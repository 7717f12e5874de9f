"""The paired-by-round ratio: why t and not a bootstrap over a few rounds, and what pairing takes out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bridgebench.stats import ratio_ci
from bridgebench.stats.paired import PAIRED_METHOD, paired_ratio

TRIALS = 300
TRUTH = 1.05


def _rounds(rng: np.random.Generator, k: int, drift: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """k rounds of an interleaved campaign: the machine's speed moves by `drift` (sd) from round to round and
    slows both sides of a round alike; each execution adds 2% of its own; B does 1.05× A's work."""
    a, b = [], []
    for _ in range(k):
        machine = 1 + rng.normal(0, drift)
        a.append(rng.normal(machine * (1 + rng.normal(0, 0.02)), 0.005, 50))
        b.append(rng.normal(TRUTH * machine * (1 + rng.normal(0, 0.02)), 0.005, 50))
    return a, b


def _paired_bootstrap(a: list[np.ndarray], b: list[np.ndarray], rng: np.random.Generator) -> tuple[float, float]:
    """What pairing by bootstrap would give: the rounds' log ratios resampled, percentile 99% interval."""
    logs = np.log([np.mean(y) / np.mean(x) for x, y in zip(a, b, strict=True)])
    means = logs[rng.integers(0, len(logs), size=(4000, len(logs)))].mean(axis=1)
    low, high = np.quantile(means, [0.005, 0.995])
    return math.exp(low), math.exp(high)


def _coverage(k: int, drift: float, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    t_hits = boot_hits = 0
    for _ in range(TRIALS):
        a, b = _rounds(rng, k, drift)
        r = paired_ratio(a, b)
        t_hits += r.low <= TRUTH <= r.high
        low, high = _paired_bootstrap(a, b, rng)
        boot_hits += low <= TRUTH <= high
    return t_hits / TRIALS, boot_hits / TRIALS


@pytest.mark.parametrize("drift", [0.0, 0.05])
def test_the_paired_interval_covers_at_its_level_where_a_bootstrap_over_few_rounds_does_not(drift: float) -> None:
    for k in (3, 5):
        t_cover, boot_cover = _coverage(k, drift, seed=k)
        assert t_cover >= 0.97, (k, t_cover)
        if k == 3:
            assert boot_cover < 0.85, boot_cover  # a "99%" bootstrap interval from 3 rounds


def test_pairing_takes_the_machines_drift_out_of_the_ratio() -> None:
    rng = np.random.default_rng(9)
    widths: dict[str, list[float]] = {"paired": [], "independent": []}
    for _ in range(60):
        a, b = _rounds(rng, 8, drift=0.05)
        p = paired_ratio(a, b)
        u = ratio_ci(a, b, resamples=2000, rng=rng)
        widths["paired"].append(p.high - p.low)
        widths["independent"].append(u.high - u.low)
    # 5% of drift common to a round against 2% of the executions' own: paired, the interval is the narrower.
    assert np.median(widths["paired"]) < 0.75 * np.median(widths["independent"])


def test_the_estimate_is_the_geometric_mean_of_the_rounds_ratios() -> None:
    a = [np.array([1.0, 1.0]), np.array([2.0, 2.0]), np.array([4.0, 4.0])]
    b = [np.array([1.1, 1.1]), np.array([2.2, 2.2]), np.array([4.4, 4.4])]
    r = paired_ratio(a, b)
    # the machine doubled its times twice; every round's ratio is 1.1, so there is nothing left to doubt
    assert r.value == pytest.approx(1.1) and r.low == pytest.approx(1.1) and r.high == pytest.approx(1.1)
    assert r.method == PAIRED_METHOD and r.confidence == 0.99


@pytest.mark.parametrize(("a", "b", "message"), [
    ([np.ones(3)], [np.ones(3)], "at least two"),
    ([np.ones(3), np.ones(3)], [np.ones(3)], "same rounds"),
    ([np.ones(3), np.zeros(3)], [np.ones(3), np.ones(3)], "round 1"),
])
def test_bad_rounds_are_refused(a: list[np.ndarray], b: list[np.ndarray], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_ratio(a, b)
