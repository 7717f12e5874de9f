"""Nearest first (bridgebench/campaign/nearest.py): when the time left cannot decide every open ratio, the
benchmarks nearest an answer get the blocks first and the others wait. The projections are pure functions
checked on planted figures; the campaign runs real processes whose times are fixed (the stepped fixture
probe), and its far ratio would take more blocks than any campaign runs, so that no assertion depends on the
machine's speed."""

from __future__ import annotations

import math
from pathlib import Path

from bridgebench import question
from bridgebench.campaign import nearest
from bridgebench.stats import Estimate
from tests.conftest import bridgebench, rows, stepped_study


def _ratio(value: float, low: float, high: float, blocks: int) -> Estimate:
    return Estimate(value, low, high, 0.999, "lock-step blocks", blocks)


def test_a_ratio_is_ranked_from_eight_blocks_by_the_blocks_it_would_still_take() -> None:
    assert question.blocks_left(_ratio(1.0, 0.97, 1.03, 5), 0.02, 0.02, 0.05) is None  # too few blocks to rank
    assert question.blocks_left(_ratio(1.0, 0.97, 1.03, 8), None, 0.02, 0.05) is None  # no spread
    near = question.blocks_left(_ratio(1.0, 0.97, 1.03, 8), 0.02, 0.02, 0.05)
    far = question.blocks_left(_ratio(1.0, 0.9, 1.1, 8), 0.2, 0.02, 0.05)
    assert near is not None and far is not None and 0 < near < far < math.inf
    # decided slower but wider than ±5 %: the blocks its interval needs to be that narrow
    wide = question.blocks_left(_ratio(3.0, 2.7, 3.3, 8), 0.05, 0.02, 0.05)
    assert wide is not None and wide > 0
    assert question.blocks_left(_ratio(3.0, 2.7, 3.3, 8), 0.05, 0.02, None) == 0  # decided, nothing more wanted


def test_the_benchmarks_that_do_not_fit_wait_and_the_nearest_never_does() -> None:
    projected = {"a": 10.0, "b": 50.0, "c": 30.0, "d": None, "e": math.inf}
    assert nearest.waiting(projected, 45.0) == {"b": 50.0, "e": math.inf}  # a and c fit; d is not ranked
    assert nearest.waiting(projected, 100.0) == {"e": math.inf}
    assert nearest.waiting({"x": 500.0, "y": 900.0}, 10.0) == {"y": 900.0}  # x is nearest: it runs
    assert nearest.waiting({"d": None}, 0.0) == {}


STUDY = """
[study]
name = "nearest"
baseline = "a"

[budget]
process_executions = 3
iterations = 6
timeout_s = 30
until_ci = 0.02
until_decided = true
max_process_executions = 30
max_time_s = 600
look_growth = 1.5
nearest_first = true

[mechanisms.a]
commands = ["python3"]
run = ["python3", "{study}/stepped_probe.py", "good", "{iterations}", "{param}"]
env = { LEVEL = "0.001" }

[mechanisms.b]
commands = ["python3"]
run = ["python3", "{study}/stepped_probe.py", "good", "{iterations}", "{param}"]
env = { LEVEL = "0.001", COUNTER = "{study}/count", FACTORS1 = "1.0,1.02,0.98,1.01,0.99", FACTORS2 = "1.0,10.0,0.1" }

[benchmarks.near]
param = 1
check_param = 1

[benchmarks.far]
param = 2
check_param = 2
"""


def test_a_far_ratio_waits_while_a_near_one_runs_and_goes_on_once_it_is_decided(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    done = bridgebench("run", str(stepped_study(tmp_path, "nearest", STUDY)), "--store", str(db), cwd=tmp_path,
                       timeout=600)
    assert done.returncode == 0, done.stderr
    decided = rows(db, "SELECT round, benchmark, executions, state, reason FROM cell_decision WHERE mechanism = 'b' "
                       "ORDER BY round")
    waits = [(r, n) for r, b, n, _, reason in decided if b == "far" and "waits this round" in reason]
    near = {r: s for r, b, _, s, _ in decided if b == "near"}
    assert waits, decided
    # it waited only once ranked (8 blocks), and only while the near one was still open
    assert all(n >= question.RANK_FROM and near.get(r) == "open" for r, n in waits), (waits, near)
    assert "settled" in near.values()  # the near one was decided (equivalent within 2 %)…
    last = [(n, s) for _, b, n, s, _ in decided if b == "far"][-1]
    assert last == (30, "capped"), last  # …and then the far one had its blocks again, up to its cap
    md = next((tmp_path / "results").glob("nearest-*.md")).read_text()
    assert "the benchmarks nearest an answer had the blocks first and the others waited" in md


class _Result:
    """What projections() reads of an analysis: each cell's ratio, spread and cost (1 s an execution here), and
    the margin."""

    equivalence = 0.02

    def __init__(self, cells: dict[tuple[str, str], tuple[Estimate, float]]) -> None:
        self.cells = cells

    def cell(self, benchmark: str, mechanism: str) -> object:
        ratio, sd = self.cells.get((benchmark, mechanism), (None, None))  # a baseline has no ratio
        return type("C", (), {"ratio": ratio, "ratio_between_sd": sd, "execution_s": 1.0})()


def test_a_benchmark_is_as_near_as_its_nearest_open_ratio_and_unranked_while_one_is() -> None:
    near, far = (_ratio(3.0, 2.7, 3.3, 8), 0.05), (_ratio(1.0, 0.9, 1.1, 8), 0.2)
    result = _Result({("x", "puc"): near, ("x", "jit2"): far, ("y", "jit2"): far,
                      ("z", "jit2"): (_ratio(1.0, 0.9, 1.1, 5), 0.2)})
    open_cells = [("x", "base"), ("x", "puc"), ("x", "jit2"), ("y", "base"), ("y", "jit2"), ("z", "base"),
                  ("z", "jit2")]
    got = nearest.projections(result, open_cells, "base", 0.05)  # type: ignore[arg-type]
    x_left = question.blocks_left(*near, 0.02, 0.05)
    y_left = question.blocks_left(*far, 0.02, 0.05)
    assert x_left is not None and y_left is not None and x_left < y_left
    # x's block (3 members at 1 s) serves its PUC ratio, the nearer; y's (2 members) its one; z is not ranked
    assert got == {"x": x_left * 3, "y": y_left * 2, "z": None}


def test_a_benchmark_waits_since_the_first_round_of_its_last_unbroken_wait() -> None:
    """Read back from the stored decisions, as a resumed campaign reads them: x has waited since round 2, y
    waited once, ran again, and waits since round 4; z never waited; w waited but not in the last round."""
    def d(round_: int, benchmark: str, waits: bool) -> dict[str, object]:
        return {"round": round_, "benchmark": benchmark, "mechanism": "m", "reason": "undecided",
                "wait_projection_s": 90.0 if waits else None}

    history = [d(r, "x", r >= 2) for r in range(5)] + [d(r, "y", r in (1, 4)) for r in range(5)] + \
        [d(r, "z", False) for r in range(5)] + [d(r, "w", r == 3) for r in range(4)]
    assert nearest.waiting_since(history) == {"x": 2, "y": 4}
    assert nearest.waiting_since([]) == {}
    assert "about 90 s more" in nearest.wait_reason(90.0, 200.0)
    assert "more blocks than any campaign runs" in nearest.wait_reason(math.inf, 200.0)
