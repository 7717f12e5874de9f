"""`bridgebench calibrate`: the δ a constant program's executions imply, stored with the machine and used
by the campaigns created on it afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import bridgebench, rows

from bridgebench.calibrate import DELTAS, FLAT_TARGET, choose_delta, judge
from bridgebench.stats.classify import DEFAULT_DELTA_RELATIVE


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


def test_calibrate_stores_the_delta_and_later_campaigns_on_the_machine_use_it(basic_study: Path,
                                                                           tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    # before: the default δ, and the report says the machine was not calibrated
    before = bridgebench("run", str(basic_study), "--benchmarks", "ok", "-p", "2", "-i", "60", "--store", str(store),
                         cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert "the default: this machine was not calibrated" in before.stdout
    done = bridgebench("calibrate", "-p", "3", "-i", "60", "--store", str(store), "--build-dir", str(tmp_path / "b"),
                       "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["delta_relative"] in DELTAS and found["executions"] == 3 and found["iterations"] == 60
    assert len(rows(store, "SELECT * FROM calibration")) == 1
    after = bridgebench("run", str(basic_study), "--benchmarks", "ok", "-p", "2", "-i", "60", "--store", str(store),
                        "--json", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    options = [json.loads(c)["options"] for (c,) in rows(store, "SELECT config_json FROM campaign ORDER BY id")]
    assert options[0]["delta_relative"] == DEFAULT_DELTA_RELATIVE and options[0]["delta_calibrated"] is None
    assert options[1]["delta_relative"] == found["delta_relative"] and options[1]["delta_calibrated"]
    # the campaign's executions are classified with the machine's δ, and kept under a key that says so
    keys = {k for (k,) in rows(store, "SELECT DISTINCT rules FROM execution_class")}
    assert len(keys) == (1 if found["delta_relative"] == DEFAULT_DELTA_RELATIVE else 2)
    report = bridgebench("report", "2", "--store", str(store), cwd=tmp_path)
    assert f"δ {found['delta_relative']:.1%} the same (this machine's, calibrated" in report.stdout


def test_calibrate_refuses_too_few_iterations_to_classify(tmp_path: Path) -> None:
    done = bridgebench("calibrate", "-i", "20", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 2 and "50" in done.stderr
