"""evidence/rounds_per_block.py (the two-stage cost model of a later block's rounds) and evidence/turn_gap.py (a
round's noise by how far apart its turns were), on planted blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bridgebench.timing.analysis import Side
from evidence.rounds_per_block import best_rounds, components, time_share
from evidence.turn_gap import residuals

Block = tuple[list[float], list[float]]


def planted(blocks: int, rounds: int, within: float, between: float, seed: int = 7) -> list[Block]:
    """Blocks of A's turns at 1 and B's at exp(block value + a round's noise): log ratios of known variances."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(blocks):
        value = rng.normal(0.0, between)
        out.append(([1.0] * rounds, list(np.exp(value + rng.normal(0.0, within, rounds)))))
    return out


def test_components_recover_the_planted_variances_and_the_rounds() -> None:
    w, b, r = components(planted(2000, 4, 0.10, 0.03)) or (0.0, 0.0, 0.0)
    assert math.sqrt(w) == pytest.approx(0.10, rel=0.05)
    assert math.sqrt(max(b, 0.0)) == pytest.approx(0.03, rel=0.15)
    assert r == 4


def test_components_need_three_blocks_of_two_rounds() -> None:
    assert components(planted(2, 4, 0.1, 0.0)) is None
    assert components(planted(3, 1, 0.1, 0.0)) is None
    assert components(planted(3, 2, 0.1, 0.0)) is not None


def test_the_best_rounds_balance_the_noise_within_against_the_cost_of_a_block() -> None:
    # w = 4 b and c0 = c1: r* = √4 = 2; four times the fixed cost doubles it
    assert best_rounds(0.04, 0.01, 1.0, 1.0) == pytest.approx(2.0)
    assert best_rounds(0.04, 0.01, 4.0, 1.0) == pytest.approx(4.0)
    assert best_rounds(0.04, 0.01, 0.0, 1.0) == 1.0  # never under one round
    assert best_rounds(0.04, 0.0, 1.0, 1.0) == math.inf  # no spread beyond the rounds: every round pays


def test_the_time_share_is_one_at_the_best_count_and_less_away_from_it() -> None:
    assert time_share(0.04, 0.01, 1.0, 1.0, 2.0) == pytest.approx(1.0)
    # at r = 8: (0.005 + 0.01)(1 + 8) = 0.135 against (0.02 + 0.01)(1 + 2) = 0.09 at r* = 2
    assert time_share(0.04, 0.01, 1.0, 1.0, 8.0) == pytest.approx(0.09 / 0.135)
    # without b, endless rounds leave only their own cost: c1·r / (c0 + c1·r)
    assert time_share(0.04, -0.001, 1.0, 1.0, 3.0) == pytest.approx(3 / 4)


def test_turn_gap_groups_each_rounds_residual_by_how_far_apart_the_turns_were() -> None:
    """Two blocks: one of three steady rounds, its turns 1, 2 and 1 places apart; one of one round (no residual)."""
    base = {0: Side("m", np.ones(3), "x", {0: 1.0, 1: 1.0, 2: 1.0}), 1: Side("m", np.ones(3), "y", {0: 1.0})}
    other = {0: Side("m", np.ones(3), "x", {0: 1.0, 1: math.e ** 0.3, 2: 1.0}), 1: Side("m", np.ones(3), "y", {0: 2.0})}
    places = {1: [0, 0, 2], 2: [1, 2, 1], 3: [0], 4: [1]}
    got = residuals(base, other, {0: 1, 1: 3}, {0: 2, 1: 4}, places, first=0)
    scale = math.sqrt(3 / 2)  # a round's variance from a block of three
    assert [d for d, _ in got] == [1, 2, 1]
    assert [v for _, v in got] == pytest.approx([-0.1 * scale, 0.2 * scale, -0.1 * scale])
    assert residuals(base, other, {0: 1, 1: 3}, {0: 2, 1: 4}, places, first=1) == []  # the later blocks only
