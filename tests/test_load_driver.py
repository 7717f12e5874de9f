"""The load driver run from the harness against a real server the harness started (bridgebench.loadtest):
a constant-rate run accounts for every scheduled request, runs merge, and bad input is a one-line error."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bridgebench.loadtest import driver
from bridgebench.loadtest.server import Server
from tests.conftest import competitor, survivors


def spec(folder: Path, variants: list[dict[str, object]]) -> Path:
    path = folder / "spec.json"
    path.write_text(json.dumps({"variants": variants}))
    return path


def test_a_constant_rate_run_against_a_started_server(tmp_path: Path, marker: str) -> None:
    (tmp_path / "hello.txt").write_text("hello")
    requests = spec(tmp_path, [{"name": "hello", "weight": 3, "method": "GET", "path": "/hello.txt"},
                               {"name": "missing", "weight": 1, "method": "GET", "path": "/nope"}])
    env = dict(os.environ) | {"PROBE_MARKER": marker}
    with Server([sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1"], env, tmp_path) as server:
        runs = [driver.run(requests, server, rate=200, connections=2, warmup_s=0.2, duration_s=0.5)
                for _ in range(2)]
    assert survivors(marker) == []
    for result in runs:
        assert result["mode"] == "constant-rate" and result["intended_rate"] == 200
        errors = sum(result["errors"].values())
        # Requests 40..139 are intended inside the recorded 0.5 s (after 0.2 s of warm-up): 100 of them.
        assert result["completed"] + result["censored"] + errors == 100, result
        assert result["statuses"].get("200", 0) + result["statuses"].get("404", 0) == result["completed"]
        assert set(result["variants"]) <= {"hello", "missing"}
    merged = driver.merge(runs)
    assert merged["merged"] == 2
    assert merged["completed"] == sum(r["completed"] for r in runs)
    assert merged["latency"]["count"] == sum(r["latency"]["count"] for r in runs)


def test_a_load_run_is_audited_and_a_cpu_bound_competitor_flags_it(tmp_path: Path, marker: str) -> None:
    requests = spec(tmp_path, [{"name": "root", "weight": 1, "method": "GET", "path": "/"}])
    env = dict(os.environ) | {"PROBE_MARKER": marker}
    with Server([sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1"], env, tmp_path) as server:
        quiet = driver.run(requests, server, rate=100, connections=1, warmup_s=0.1, duration_s=1)
        with competitor():
            busy = driver.run(requests, server, rate=100, connections=1, warmup_s=0.1, duration_s=1)
    assert survivors(marker) == []
    assert quiet["machine"]["own_cpu_s"] > 0 and quiet["machine"]["wall_s"] >= 1.1
    assert busy["machine"]["others_cores"] > 0.25, busy["machine"]
    assert "others used" in busy["machine"]["disturbed"]


def test_bad_input_to_the_driver_is_a_one_line_error(tmp_path: Path, marker: str) -> None:
    env = dict(os.environ) | {"PROBE_MARKER": marker}
    with (Server([sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1"], env, tmp_path) as server,
          pytest.raises(driver.DriverError, match=r"load run: loaddriver: .*spec\.json: no variants")):
        driver.run(spec(tmp_path, []), server, rate=10, connections=1, warmup_s=0, duration_s=0.1)
    with pytest.raises(driver.DriverError, match=r"merge: .*not a bridgebench-load/1 result"):
        driver.merge([{"protocol": "something else"}])
