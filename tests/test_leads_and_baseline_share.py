"""evidence/leads.py and evidence/baseline_share.py: two replays of stored lock-step campaigns, on planted data."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest

from bridgebench.stats.classify import FLAT, SLOWDOWN, WARMUP
from bridgebench.timing.analysis import Side
from bridgebench.timing.result import Run
from evidence.baseline_share import baseline_variance, gain, to_two, values
from evidence.leads import move, two_block_lead


def run(block: str | None, kind: str | None, steady_iteration: int | None, execution_id: int = 1) -> Run:
    return Run(execution_id, 0, 50, 1, kind, None, None, steady_iteration, None, (), (), ((0, 50),), (), None, {},
               block=block)


def test_one_blocks_late_step_does_not_set_the_two_block_lead_and_a_shared_warmup_does() -> None:
    one_block = [run("a", WARMUP, 37), run("a", FLAT, 1), run("b", FLAT, 1), run("b", FLAT, 1), run("c", FLAT, 1)]
    assert two_block_lead(one_block) == 0
    shared = [run("a", WARMUP, 4), run("a", WARMUP, 31), run("b", WARMUP, 5), run("c", FLAT, 1)]
    assert two_block_lead(shared) == 4  # blocks' longest: 30, 4, 0


def test_a_slowdown_sets_no_lead_and_executions_run_alone_count_as_blocks_of_their_own() -> None:
    assert two_block_lead([run("a", SLOWDOWN, 40), run("b", FLAT, 1)]) == 0
    assert two_block_lead([run(None, WARMUP, 9, 1), run(None, WARMUP, 7, 2)]) == 6
    assert two_block_lead([run("a", WARMUP, 9)]) == 8
    assert two_block_lead([run("a", None, None)]) is None


def test_a_shorter_lead_moves_a_mean_by_the_warmup_it_takes_in() -> None:
    times = np.array([2.0, 2.0] + [1.0] * 48)
    assert move(times, 2, 2, 10) == 0.0
    # from 0, two of the ten iterations are twice as long: the mean log moves by 2 log 2 / 10
    assert move(times, 0, 2, 10) == pytest.approx(2 * math.log(2) / 10)


def side(block: str, turns: dict[int, float]) -> Side:
    return Side("m", np.ones(3), block, turns)


def test_a_blocks_value_is_over_the_rounds_both_sides_were_steady_in_the_same_block() -> None:
    base = {0: side("x", {0: 1.0, 1: 1.0, 2: 1.0}), 1: side("y", {0: 1.0})}
    other = {0: side("x", {0: 2.0, 2: 2.0}), 1: side("z", {0: 3.0})}
    assert values(base, other) == {"x": pytest.approx(math.log(2))}  # block z is not base's: no value


def test_to_both_takes_the_geometric_mean_of_the_baseline_and_its_twin() -> None:
    base, twin, other = {0: side("x", {0: 1.0})}, {0: side("x", {0: 4.0})}, {0: side("x", {0: 4.0})}
    alone, both = to_two(base, twin, other)["x"]
    assert (alone, both) == (pytest.approx(math.log(4)), pytest.approx(math.log(2)))


def test_the_covariance_of_two_ratios_recovers_the_baselines_planted_variance() -> None:
    rng = random.Random(7)
    blocks = [f"b{i}" for i in range(4000)]
    base = {k: rng.gauss(0, 0.05) for k in blocks}  # what every ratio of the block shares
    ratios = {m: {k: rng.gauss(0, 0.02) - base[k] for k in blocks} for m in ("lua51", "lua54")}
    var_b, n = baseline_variance(ratios)
    assert n == 4000
    assert math.sqrt(var_b) == pytest.approx(0.05, rel=0.05)
    assert statistics.stdev(ratios["lua51"].values()) == pytest.approx(math.hypot(0.05, 0.02), rel=0.05)
    assert baseline_variance({"lua51": ratios["lua51"]}) == (None, 4000)  # one mechanism: no covariance


def test_more_baseline_processes_pay_only_where_the_baseline_is_most_of_the_spread() -> None:
    # all of it the baseline's: a second process halves the variance for 3 members' cost instead of 2
    assert gain(1.0, 1.0, 2, 2) == pytest.approx(2 / (0.5 * 3))
    # none of it: the extra process only costs
    assert gain(1.0, 0.0, 5, 2) == pytest.approx(5 / 6)
    # a baseline part estimated above the ratio's own variance counts as all of it, not more
    assert gain(0.25, 1.0, 2, 2) == gain(1.0, 1.0, 2, 2)
