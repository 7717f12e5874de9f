"""evidence/goal_time.py: pooling reports' ratios and costs, and the seconds a goal would take at those spreads."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bridgebench import question
from evidence.goal_time import Pool, main, shared_covariance

POINTS = [3, 5, 8, 12, 18, 27, 41, 62, 93, 140, 210, 300]


def _cell(benchmark: str, mechanism: str, value: float | None = None, blocks: int = 0, sd: float | None = None,
          later_s: float = 0.0, later: int = 0, first_s: float = 0.0) -> dict:
    """A report's cell: three first executions of first_s each, `later` more of later_s each (two iterations at
    half of it), and its ratio to the baseline over `blocks` at the adaptive budget's confidence."""
    runs = [{"pexec": i, "iterations": 1, "steady_mean": first_s} for i in range(3)]
    runs += [{"pexec": 3 + i, "iterations": 2, "steady_mean": later_s / 2} for i in range(later)]
    ratio = {"value": value, "executions": blocks, "confidence": 0.999} if value is not None else None
    return {"benchmark": benchmark, "mechanism": mechanism, "per_execution": runs, "ratio": ratio,
            "ratio_between_sd": sd}


def _report(*cells: dict) -> dict:
    return {"baseline": "a", "headline": "h", "equivalence": 0.02, "cells": list(cells),
            "adaptive": {"decided_within": 0.05, "look_points": POINTS, "first_process_executions": 3}}


def test_ratios_pool_their_logs_by_blocks_and_their_variances_by_degrees_of_freedom() -> None:
    pool = Pool.read([_report(_cell("x", "h", math.exp(0.01), 5, 0.02)),
                      _report(_cell("x", "h", math.exp(0.03), 15, 0.04))])
    estimate, sd = pool.ratio(("x", "h"))
    assert math.log(estimate) == pytest.approx((5 * 0.01 + 15 * 0.03) / 20)
    assert sd == pytest.approx(math.sqrt((4 * 0.02**2 + 14 * 0.04**2) / 18))


def test_a_ratio_is_settled_only_at_a_look_point() -> None:
    pool = Pool.read([_report(_cell("x", "h", 1.0, 12, 0.03), _cell("x", "o", 3.0, 12, 0.08))])
    for mechanism, needed in (("h", question.blocks_to_decide(1.0, 0.03, 0.999, 0.02)[1]),
                              ("o", question.blocks_to_reach(math.log1p(0.05), 0.08, 0.999))):
        assert needed is not None and needed not in POINTS  # else the rounding would not show
        assert pool.blocks(("x", mechanism)) == next(p for p in POINTS if p >= needed)


def test_a_ratio_no_look_would_settle_is_out_of_reach_and_its_benchmark_takes_forever() -> None:
    pool = Pool.read([_report(_cell("x", "h", 1.019, 12, 0.2), _cell("x", "a", later_s=1.0, later=5))])
    assert pool.blocks(("x", "h")) is None
    assert pool.seconds("x", ["h"]) == math.inf


def test_each_member_runs_to_its_own_count_and_the_baseline_to_the_last() -> None:
    # sd 0: settled at the first blocks; 0.004 on a true 1: equivalent at 5 blocks (t at 4 degrees of freedom)
    pool = Pool.read([_report(_cell("x", "a", later_s=1.0, later=4), _cell("x", "h", 1.0, 5, 0.004, 2.0, 4),
                              _cell("x", "o", 3.0, 5, 0.0, 5.0, 4))])
    assert (pool.blocks(("x", "h")), pool.blocks(("x", "o"))) == (5, 3)
    assert pool.seconds("x", ["o"]) == 0.0
    assert pool.seconds("x", ["o", "h"]) == pytest.approx(2 * 2.0 + 2 * 1.0)


def test_the_goal_adds_the_cheapest_headline_ratios_first() -> None:
    cheap = [_cell("x", "a", later_s=1.0, later=2, first_s=1.0), _cell("x", "h", 1.0, 5, 0.004, 2.0, 2, 1.0)]
    dear = [_cell("y", "a", later_s=1.0, later=2, first_s=1.0), _cell("y", "h", 1.0, 12, 0.03, 9.0, 2, 1.0)]
    pool = Pool.read([_report(*dear, *cheap)])
    base, steps = pool.goal_times()
    assert base == pytest.approx(12.0)  # 4 cells' first 3 executions of 1 s, nothing else to settle
    n = pool.blocks(("y", "h"))
    assert n is not None
    assert steps == [("x", pytest.approx(12.0 + 2 * 3.0)), ("y", pytest.approx(18.0 + (n - 3) * 10.0))]


def test_the_script_reads_a_budget_of_the_headline_alone_and_names_a_missing_report(tmp_path, capsys) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_report(_cell("x", "a", later_s=1.0, later=2, first_s=1.0),
                                       _cell("x", "h", 1.0, 5, 0.004, 2.0, 2, 1.0))))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "| x | ×1.000 | 0.40% | 5 | — | 0 | 6 |" in out
    assert " 1 of 1 headline ratios decided: 12 s of executions (+x)" in out
    assert main([str(tmp_path / "gone.json")]) == 2
    assert "gone.json: no such report" in capsys.readouterr().err


def test_a_benchmark_without_a_headline_ratio_counts_its_others_and_is_no_step_of_the_goal(tmp_path, capsys) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_report(_cell("x", "a", later_s=1.0, later=2, first_s=1.0),
                                       _cell("x", "h", first_s=1.0),  # its ratio not reached: no interval
                                       _cell("x", "o", 3.0, 5, 0.0, 5.0, 2, 1.0))))
    assert main([str(path)]) == 0
    assert "| x | ×nan | nan% | — | o: 3 (0.00%) | 0 | 0 |" in capsys.readouterr().out
    assert Pool.read([json.loads(path.read_text())]).goal_times() == (9.0, [])


def test_what_a_benchmarks_ratios_share_from_block_to_block_is_their_blocks_covariance() -> None:
    # Planted: every ratio of a block moved by the same baseline effect (sd 5 %) plus its own (sd 3 %).
    rng = np.random.default_rng(7)
    common = rng.normal(0.0, 0.05, 2000)
    logs = {m: {f"b{j}": float(c + rng.normal(0.0, 0.03)) for j, c in enumerate(common)} for m in ("h", "o", "p")}
    found = shared_covariance(logs)
    assert found is not None and found[1] == 1999
    assert found[0] == pytest.approx(0.05**2, rel=0.1)
    logs["p"] = {"b0": 0.0, "b1": 0.0}  # the blocks all ran: two
    assert shared_covariance(logs) is None
    assert shared_covariance({"h": logs["h"]}) is None  # nothing to share with


def test_a_second_baseline_a_block_halves_what_the_ratios_share_and_pays_the_baseline_twice() -> None:
    pool = Pool.read([_report(_cell("x", "a", later_s=1.0, later=4), _cell("x", "h", 1.0, 5, 0.004, 2.0, 4),
                              _cell("x", "o", 3.0, 12, 0.08, 5.0, 4))])
    before = pool.blocks(("x", "o"))
    assert before is not None and before > 5
    assert pool.seconds("x", ["o", "h"]) == pytest.approx((before - 3) * (5.0 + 1.0) + 2 * 2.0)
    pool.shared, pool.baselines = {"x": 0.06**2}, 2
    assert pool.ratio(("x", "o"))[1] == pytest.approx(math.sqrt(0.08**2 - 0.06**2 / 2))
    assert pool.ratio(("x", "h"))[1] == 0.0  # less left than shared: nothing between blocks
    after = pool.blocks(("x", "o"))
    assert after is not None and 5 < after < before
    h = pool.blocks(("x", "h"))
    assert h is not None and h < after
    assert pool.seconds("x", ["o", "h"]) == pytest.approx((after - 3) * (5.0 + 2 * 1.0) + (h - 3) * 2.0)


def test_a_model_of_more_baselines_needs_the_stores_and_a_missing_store_is_named(tmp_path, capsys) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_report(_cell("x", "a", later_s=1.0, later=2, first_s=1.0))))
    assert main([str(path), "--baselines", "2"]) == 2
    assert "only with --stores" in capsys.readouterr().err
    assert main([str(path), "--baselines", "2", "--stores", str(tmp_path / "gone.sqlite")]) == 2
    assert "gone.sqlite: no such store" in capsys.readouterr().err
