"""`bridgebench calibrate`: the δ a constant program's executions imply, stored with the machine and used
by the campaigns created on it afterwards."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import bridgebench, rows

from bridgebench.calibrate import DELTAS, FLAT_TARGET, choose_delta, judge, judge_lengths
from bridgebench.options import delta_for, delta_table
from bridgebench.stats.classify import DEFAULT_DELTA_RELATIVE
from bridgebench.timing.analysis import rules
from bridgebench.timing.report.tables import deltas_by_length


def executions(rng: np.random.Generator, n: int, step: float, noise: float = 0.002) -> list[np.ndarray]:
    """n constant executions of 100 iterations, each with a shift of `step` (relative) in its first 40."""
    out = []
    for _ in range(n):
        t = 0.002 * (1 + noise * rng.standard_normal(100))
        t[:40] *= 1 + step
        out.append(t)
    return out


def test_the_delta_is_the_smallest_at_which_the_target_share_is_flat() -> None:
    assert choose_delta({0.01: 0.5, 0.02: 0.96, 0.03: 1.0}) == (0.02, True)
    assert choose_delta({0.01: FLAT_TARGET, 0.02: 1.0}) == (0.01, True)
    assert choose_delta({0.01: 0.1, 0.02: 0.9}) == (0.02, False)  # none reaches it: the largest, said so


@pytest.mark.parametrize(("step", "at_least", "at_most"), [(0.0, 0.005, 0.005), (0.03, 0.03, 0.04)])
def test_a_machine_that_shifts_a_constant_program_gets_a_delta_that_tolerates_the_shift(
        step: float, at_least: float, at_most: float) -> None:
    c = judge(executions(np.random.default_rng(1), 20, step), "m")
    assert c.reached and at_least <= c.delta_relative <= at_most, c.flat_by_delta
    assert c.executions == 20 and c.iterations == 100 and c.iteration_ms == pytest.approx(2.0, rel=0.01)
    assert c.startup_profile[0] == pytest.approx(1 + step, abs=0.005)  # the first tenth: the shifted part
    assert c.largest_shift["50"] == pytest.approx(step, abs=0.005)


def test_a_machine_too_noisy_for_any_delta_says_so() -> None:
    c = judge(executions(np.random.default_rng(2), 10, 0.25), "m")
    assert not c.reached and c.delta_relative == max(DELTAS)


def test_each_length_gets_its_own_delta_and_a_longer_one_never_a_smaller_delta() -> None:
    rng = np.random.default_rng(3)
    short, long = executions(rng, 20, 0.0), executions(rng, 20, 0.03)
    m = judge_lengths({100: short, 400: [np.tile(t, 4) for t in long]}, "m")
    assert [c.iterations for c in m.lengths] == [100, 400]
    assert m.lengths[0].delta_relative == 0.005 and 0.03 <= m.lengths[1].delta_relative <= 0.04
    table = delta_table(m.to_json())
    assert [s for s, _, _ in table] == pytest.approx([0.2, 0.8], rel=0.01)
    assert [(d, ok) for _, d, ok in table] == [(0.005, True), (m.lengths[1].delta_relative, True)]
    # a longer length measured a smaller δ by chance: it takes the shorter one's, and a δ that did not reach
    # the flat share at a shorter length does not at a longer one either
    dipped = {"lengths": [{"iterations": 100, "iteration_ms": 2.0, "delta_relative": 0.05, "reached": True},
                          {"iterations": 250, "iteration_ms": 2.0, "delta_relative": 0.10, "reached": False},
                          {"iterations": 700, "iteration_ms": 2.0, "delta_relative": 0.03, "reached": True}]}
    assert delta_table(dipped) == ((0.2, 0.05, True), (0.5, 0.10, False), (1.4, 0.10, False))
    assert deltas_by_length(delta_table(dipped)) == ("5.0% (0.2 s), 10.0% (0.5 s, not reached: too few flat even "
                                                     "so), 10.0% (1.4 s, not reached: too few flat even so)")
    # a record stored before lengths existed is one length; one without its length has no table
    old = {**m.lengths[1].to_json()}
    assert delta_table(old) == ((pytest.approx(0.8, rel=0.01), m.lengths[1].delta_relative, True),)
    assert delta_table({"delta_relative": 0.03}) == ()


def test_an_execution_is_judged_with_the_delta_of_the_length_nearest_its_own() -> None:
    table = ((0.2, 0.04, True), (0.5, 0.06, True), (1.5, 0.10, False))
    assert delta_for(0.01, table, 0.01) == 0.04  # shorter than all: the shortest
    assert delta_for(0.3, table, 0.01) == 0.04  # log-nearest: 0.3 is ×1.5 from 0.2 and ×1.67 from 0.5…
    assert delta_for(0.33, table, 0.01) == 0.06  # …and 0.33 ×1.65 from 0.2, ×1.52 from 0.5
    assert delta_for(1.0, table, 0.01) == 0.10
    assert delta_for(60.0, table, 0.01) == 0.10
    assert delta_for(1.0, (), 0.01) == 0.01  # no table: the campaign's one δ
    assert delta_for(math.sqrt(0.2 * 0.5), table, 0.01) == 0.06  # a tie: the longer length


def test_calibrate_stores_the_delta_and_later_campaigns_on_the_machine_use_it(basic_study: Path,
                                                                           tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    # before: the default δ, and the report says the machine was not calibrated
    before = bridgebench("run", str(basic_study), "--benchmarks", "ok", "-p", "2", "-i", "60", "--store", str(store),
                         cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert "the default: this machine was not calibrated" in before.stdout
    done = bridgebench("calibrate", "-p", "3", "-i", "60", "-i", "180", "--store", str(store), "--build-dir",
                       str(tmp_path / "b"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["lengths"]
    assert [c["iterations"] for c in found] == [60, 180] and all(c["executions"] == 3 for c in found)
    assert all(c["delta_relative"] in DELTAS for c in found)
    assert len(rows(store, "SELECT * FROM calibration")) == 1
    described = json.loads(done.stdout)["described"]  # the boot and CPU it was made on (reference.py)
    assert set(described) == {"booted", "cpu_signature"} and described["booted"]
    after = bridgebench("run", str(basic_study), "--benchmarks", "ok", "-p", "2", "-i", "60", "--store", str(store),
                        "--json", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    options = [json.loads(c)["options"] for (c,) in rows(store, "SELECT config_json FROM campaign ORDER BY id")]
    assert options[0]["delta_relative"] == DEFAULT_DELTA_RELATIVE and options[0]["delta_calibrated"] is None
    assert not options[0].get("delta_by_length")
    table = [tuple(e) for e in options[1]["delta_by_length"]]
    assert [d for _, d, _ in table] == [found[0]["delta_relative"], max(c["delta_relative"] for c in found)]
    assert options[1]["delta_relative"] == found[0]["delta_relative"] and options[1]["delta_calibrated"]
    # each execution is classified with the δ of the length nearest its own, and kept under a key that says so
    walls = [w for (w,) in rows(store, "SELECT wall_s FROM execution WHERE campaign_id=2 AND status='ok'")]
    expected = {rules(delta_for(w, tuple(table), 0.0)) for w in walls}
    keys = {k for (k,) in rows(store, "SELECT DISTINCT rules FROM execution_class WHERE execution_id IN "
                                      "(SELECT id FROM execution WHERE campaign_id=2)")}
    assert keys == expected
    report = bridgebench("report", "2", "--store", str(store), cwd=tmp_path)
    words = (f"δ by execution length: {deltas_by_length(table)}, each execution's from the length nearest its own "
             "(this machine's, calibrated")
    assert " ".join(words.split()) in " ".join(report.stdout.split())


def test_calibrate_refuses_too_few_iterations_to_classify(tmp_path: Path) -> None:
    done = bridgebench("calibrate", "-i", "20", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 2 and "50" in done.stderr
