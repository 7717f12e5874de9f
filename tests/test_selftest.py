"""The self-test: its phase detector on constructed series, and the command end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from bridgebench import selftest
from bridgebench.campaign import CampaignError
from bridgebench.selftest import MIN_ITERATIONS, _phase_found
from bridgebench.store import Store
from bridgebench.study import STUDIES_DIR, Budget, load_study
from tests.conftest import bridgebench


def series(at: int, factor: float, n: int = 120) -> np.ndarray:
    t = np.full(n, 3e-3) + np.random.default_rng(0).normal(0, 1e-5, n)
    t[at:] *= factor
    return t


def test_phase_found_needs_place_direction_and_size() -> None:
    slow = series(60, 1.3)
    assert _phase_found(slow, {"changepoints": [61]}, 60, 1.3)
    assert not _phase_found(slow, {"changepoints": [70]}, 60, 1.3)  # wrong place
    assert not _phase_found(slow, {"changepoints": []}, 60, 1.3)  # not found
    assert not _phase_found(series(60, 1 / 1.3), {"changepoints": [60]}, 60, 1.3)  # wrong direction
    assert not _phase_found(series(60, 1.05), {"changepoints": [60]}, 60, 1.3)  # far too small
    warm = series(20, 1 / 1.5)
    assert _phase_found(warm, {"changepoints": [20, 90]}, 20, 1 / 1.5)


def test_selftest_command_reports_every_check_and_exits_by_its_verdict(tmp_path: Path) -> None:
    result = bridgebench("selftest", "--json", "--store", str(tmp_path / "s.sqlite"), "--build-dir",
                         str(tmp_path / "build"), cwd=tmp_path, timeout=600)
    report = json.loads(result.stdout)
    assert set(report["tally"]) == {"A vs A: unchanged", "A vs +5% work: worsened", "ratio CI holds 1.05",
                                    "planted phase found", "class as planted (information)"}
    assert report["tally"]["A vs A: unchanged"][1] == 3
    assert report["tally"]["planted phase found"][1] == 6
    counted_ok = all(f["ok"] for f in report["findings"] if f["counts"])
    assert report["ok"] is counted_ok
    assert result.returncode == (0 if counted_ok else 5), result.stderr


def test_a_budget_too_short_for_the_planted_phases_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    study = load_study(STUDIES_DIR / "selftest" / "study.toml")
    assert all(b.iterations >= MIN_ITERATIONS for b in study.budgets.values())  # the shipped budgets fit
    short = dataclasses.replace(study, budgets={"short": Budget(2, 10, 60.0)})
    monkeypatch.setattr(selftest, "load_study", lambda path: short)
    with pytest.raises(CampaignError, match="budget 'short' has 10 iterations; the planted phases need at least 80"):
        selftest.run_selftest(Store(tmp_path / "s.sqlite"), tmp_path / "build", 1, "short")
