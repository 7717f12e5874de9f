from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from bridgebench.stats.changepoints import backend, changepoints, default_penalty
from evidence.changepoint_agreement import SHAPES, both_searches, planted

# The package re-exports the function changepoints(), which hides the module of the same name.
cp_module = importlib.import_module("bridgebench.stats.changepoints")

REPO = Path(__file__).resolve().parents[1]


def _close(found: list[int], expected: list[int], slack: int = 2) -> bool:
    return len(found) == len(expected) and all(
        abs(f - e) <= slack for f, e in zip(found, expected, strict=True))


@pytest.mark.parametrize("seed", range(5))
def test_planted_mean_changes_are_found(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(1.0, 0.05, 150), rng.normal(1.3, 0.05, 250), rng.normal(0.9, 0.05, 200)])
    assert _close(changepoints(x), [150, 400])


@pytest.mark.parametrize("seed", range(5))
def test_planted_variance_change_is_found(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    x = np.concatenate([rng.normal(1.0, 0.01, 300), rng.normal(1.0, 0.1, 300)])
    assert _close(changepoints(x), [300])


@pytest.mark.parametrize("n", [50, 200, 1000])
def test_no_changepoints_in_stationary_noise(n: int) -> None:
    for seed in range(8):
        rng = np.random.default_rng(seed)
        assert changepoints(rng.normal(0.01, 0.0005, n)) == [], seed
        assert changepoints(rng.uniform(0.5, 0.6, n)) == [], seed


def test_quantised_stationary_data_has_no_changepoints() -> None:
    # Coarse, timer-like quantisation gives long runs of identical values: without a floor at the
    # quantisation step's variance, such runs would have a hugely negative cost and be cut out as segments.
    for seed in range(5):
        rng = np.random.default_rng(seed)
        assert changepoints(np.round(rng.normal(100.0, 0.5, 800))) == [], seed
        assert changepoints(np.round(rng.normal(100.0, 1.0, 800))) == [], seed


def test_constant_and_tiny_series() -> None:
    assert changepoints(np.full(100, 0.25)) == []
    assert changepoints(np.array([])) == []
    assert changepoints(np.array([1.0, 2.0, 3.0])) == []


def test_result_does_not_depend_on_units_or_offset() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(0.02, 0.001, 100), rng.normal(0.01, 0.0005, 400)])
    found = changepoints(x)
    assert _close(found, [100])
    assert changepoints(x * 1e6) == found
    assert changepoints(x * 1e-3) == found
    assert changepoints(x + 5.0) == found


def test_penalty_and_min_size() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(0.0, 1.0, 100), rng.normal(1.0, 1.0, 100)])
    assert changepoints(x, penalty=0.0) != []  # no penalty: segments everywhere
    assert len(changepoints(x, penalty=0.0)) > len(changepoints(x))
    assert changepoints(x, penalty=1e9) == []
    found = changepoints(x, penalty=0.0, min_size=10)
    assert all(b - a >= 10 for a, b in zip([0, *found], [*found, len(x)], strict=True))
    assert default_penalty(2000) == pytest.approx(15.0 * np.log(2000))
    with pytest.raises(ValueError):
        changepoints(x, min_size=1)
    with pytest.raises(ValueError):
        changepoints(x, penalty=-1.0)
    with pytest.raises(ValueError):
        changepoints(np.array([1.0, np.nan, 2.0, 3.0, 4.0]))


def _random_series(seed: int) -> tuple[np.ndarray, int, float]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 300))
    x = rng.normal(0.0, 1.0, n) if rng.random() < 0.7 else rng.standard_exponential(n)
    for _ in range(int(rng.integers(0, 4))):
        i = int(rng.integers(0, n))
        x[i:] = x[i:] * rng.uniform(0.2, 3.0) + rng.normal(0.0, 2.0)
    kind = rng.random()
    if kind < 0.2:
        x = np.round(x, 1)
    elif kind < 0.3:
        x = np.round(x)
    elif kind < 0.4:
        x = 1e-3 + 1e-9 * x
    min_size = int(rng.integers(2, 5))
    penalty = default_penalty(n) if rng.random() < 0.6 else float(rng.uniform(0.0, 30.0))
    return x, min_size, penalty


def test_c_and_numpy_backends_agree_exactly() -> None:
    lib = cp_module._load_c()
    if lib is None:
        pytest.skip(f"no C backend here: {cp_module.backend_problem()}")
    compared = 0
    for seed in range(300):
        x, min_size, penalty = _random_series(seed)
        prepared = cp_module._prepare(x)
        if prepared is None:
            continue
        s1, s2, vfloor = prepared
        n = len(x)
        # Besides the changepoints, the optimal cost of every prefix must be the same to the last bit.
        costs = [np.full(n + 1, np.nan) for _ in range(3)]
        reference = cp_module._pelt_numpy(s1, s2, n, min_size, penalty, vfloor, f=costs[0])
        assert cp_module._pelt_c(lib, s1, s2, n, min_size, penalty, vfloor, f=costs[1]) == reference, seed
        assert cp_module._pelt_c(lib, s1, s2, n, min_size, penalty, vfloor, lanes=2, f=costs[2]) == reference
        if n >= 2 * min_size:
            defined = np.r_[0, min_size:n + 1]
            assert np.array_equal(costs[0][defined], costs[1][defined]), seed
            assert np.array_equal(costs[0][defined], costs[2][defined]), seed
        compared += 1
    assert compared > 250




@pytest.mark.parametrize("shape", SHAPES)
def test_setting_starts_aside_finds_exactly_the_plain_searchs_changepoints(shape: str) -> None:
    if cp_module._load_c() is None:
        pytest.skip(f"no C backend here: {cp_module.backend_problem()}")
    rng = np.random.default_rng(SHAPES.index(shape))
    saved = plain_work = 0
    for length in [*rng.integers(4, 400, 40), *rng.integers(400, 2500, 12), 6250]:
        n = int(length)
        x = planted(shape, n, rng)
        for min_size, penalty in [(2, default_penalty(n)), (int(rng.integers(2, 6)), float(rng.uniform(0, 40)))]:
            plain, fast, (plain_evals, fast_evals) = both_searches(x, min_size, penalty)
            assert fast == plain, (shape, n, min_size, penalty)
            plain_work += plain_evals
            saved += plain_evals - fast_evals
    assert saved >= 0 and plain_work > 0


def test_setting_starts_aside_on_recorded_series() -> None:
    if cp_module._load_c() is None:
        pytest.skip(f"no C backend here: {cp_module.backend_problem()}")
    recorded = json.loads((REPO / "tests" / "fixtures" / "recorded-series.json").read_text())["series"]
    for executions in recorded.values():
        for values in executions:
            x = np.array(values)
            plain, fast, _ = both_searches(x, 2, default_penalty(len(x)))
            assert fast == plain


def test_setting_starts_aside_saves_the_work_on_a_series_without_changepoints() -> None:
    # The plain search evaluates every start at every step on such a series (n²/2 costs); setting aside
    # the starts that provably cannot win must leave a small part of that (measured: about 1/36 at 6250).
    if cp_module._load_c() is None:
        pytest.skip(f"no C backend here: {cp_module.backend_problem()}")
    x = np.random.default_rng(11).normal(1e-3, 1e-5, 6250)
    plain, fast, (plain_evals, fast_evals) = both_searches(x, 2, default_penalty(len(x)))
    assert plain == fast == []
    assert plain_evals == sum(range(2, len(x) - 1))  # every start at every step: nothing was pruned
    assert fast_evals * 10 < plain_evals


def test_own_log_is_accurate() -> None:
    rng = np.random.default_rng(0)
    v = np.exp(rng.uniform(-600.0, 600.0, 100_000))
    assert np.max(np.abs(cp_module._log_table(v) - np.log(v))) < 1e-12
    v = rng.uniform(0.5, 2.0, 100_000)
    assert np.max(np.abs(cp_module._log_table(v) - np.log(v))) < 1e-15


def test_agrees_with_ruptures() -> None:
    rpt = pytest.importorskip("ruptures")
    # ruptures' "normal" cost of a segment is m·log(σ²) (σ² the MLE variance), ours m·(log(2π σ²) + 1):
    # they differ by m·(log 2π + 1), which sums to the same n·(log 2π + 1) for every segmentation, so the
    # optimal segmentation for a given penalty is the same and the penalties are directly comparable.
    # ruptures adds 1e-6 to the variance by default (for constant segments); we switch that off, and use
    # data on a scale where our own floor never binds.
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(100, 160))
        x = rng.normal(10.0, 1.0, n)
        for _ in range(int(rng.integers(0, 3))):
            i = int(rng.integers(10, n - 10))
            x[i:] = (x[i:] - 10.0) * rng.uniform(0.3, 3.0) + 10.0 + rng.normal(0.0, 2.0)
        penalty = default_penalty(n) if seed % 2 == 0 else float(rng.uniform(5.0, 40.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            algo = rpt.Pelt(model="normal", min_size=2, jump=1, params={"add_small_diag": False}).fit(x)
            theirs = algo.predict(pen=penalty)[:-1]  # ruptures also lists the series' end
        assert changepoints(x, penalty=penalty) == theirs, seed


def test_backend_is_named() -> None:
    assert backend() in ("c", "numpy")


def test_compiles_into_cache_and_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(1.0, 0.01, 80), rng.normal(1.2, 0.01, 120)])
    s1, s2, vfloor = cp_module._prepare(x)
    expected = cp_module._pelt_numpy(s1, s2, len(x), 2, default_penalty(len(x)), vfloor)
    cache = tmp_path / "cache"

    def fresh_start() -> None:
        monkeypatch.setattr(cp_module, "_state", cp_module._State())

    monkeypatch.setenv("BRIDGEBENCH_CACHE", str(cache))
    monkeypatch.delenv("BRIDGEBENCH_PELT_BACKEND", raising=False)
    monkeypatch.delenv("CC", raising=False)
    fresh_start()
    if cp_module._load_c() is None:
        pytest.skip(f"no working C compiler: {cp_module.backend_problem()}")
    built = list(cache.glob("pelt-*.so"))
    assert len(built) == 1
    assert sorted(cache.iterdir()) == built  # no temporary file left behind
    assert backend() == "c"
    assert changepoints(x) == expected

    # The next start finds the library in the cache and does not compile it again.
    stamp = built[0].stat().st_mtime_ns
    fresh_start()
    assert backend() == "c"
    assert built[0].stat().st_mtime_ns == stamp

    # The compiler is part of the cache key: with one that does not work we fall back to numpy.
    fresh_start()
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert backend() == "numpy"
    assert "unavailable" in (cp_module.backend_problem() or "")
    assert changepoints(x) == expected
    assert sorted(cache.iterdir()) == built

    monkeypatch.delenv("CC")
    fresh_start()
    monkeypatch.setenv("BRIDGEBENCH_PELT_BACKEND", "numpy")
    assert backend() == "numpy"


def test_concurrent_first_use_is_safe(tmp_path: Path) -> None:
    if cp_module._load_c() is None:
        pytest.skip("no C backend here")
    env = dict(os.environ, BRIDGEBENCH_CACHE=str(tmp_path), PYTHONPATH=str(REPO))
    env.pop("BRIDGEBENCH_PELT_BACKEND", None)
    code = ("import numpy as np; from bridgebench.stats.changepoints import backend, changepoints;"
            "wobble = np.arange(50) % 3 * 0.01;"
            "x = np.r_[np.full(50, 1.0) + wobble, np.full(50, 2.0) + wobble];"
            "print(backend(), changepoints(x))")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outputs == ["c [50]"] * 3
    assert len(list(tmp_path.glob("pelt-*.so"))) == 1
    assert not list(tmp_path.glob(".*"))
