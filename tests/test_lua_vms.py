"""The Lua probe and the lua-vms study on the real VMs (installed by scripts/install.sh)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bridgebench.build import build_study
from bridgebench.campaign.timing import check, command_for
from bridgebench.runner import CRASHED, OK, Execution, execute
from bridgebench.study import STUDIES_DIR, read_study
from tests.conftest import bridgebench

STUDY = read_study(STUDIES_DIR / "lua-vms" / "study.toml")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return build_study(STUDY, tmp_path_factory.mktemp("build"))


def test_every_mechanism_builds_here(builds: dict) -> None:
    unavailable = {m: b.reason for m, b in builds.items() if not b.available}
    assert not unavailable, unavailable
    assert "luajit2" in builds["luajit2"].version and "OpenResty" in builds["luajit2"].version


def test_every_vm_agrees_on_every_benchmark(builds: dict) -> None:
    rows = check(STUDY, builds, tuple(STUDY.benchmarks), 120)
    assert len(rows) == len(STUDY.benchmarks) * len(STUDY.mechanisms)
    assert [r for r in rows if r.status != "agrees"] == []


@pytest.mark.parametrize("mechanism", list(STUDY.mechanisms))
def test_probe_speaks_the_protocol_with_a_wall_clock(builds: dict, mechanism: str) -> None:
    argv, env = command_for(STUDY, builds[mechanism], "queens", "6", 4)
    run = execute(argv, env, STUDY.dir, 4, 60)
    assert run.status == OK, run.detail
    assert run.output.info["clock"].startswith("CLOCK_MONOTONIC")
    assert run.output.info["clock_resolution_s"] <= 1e-6
    assert len(run.output.counters["heap_kb"]) == 4
    jit_off = Path(argv[0]).name.startswith("lua5") or "-joff" in argv  # PUC Lua (and its twins), LuaJIT -joff
    assert ("JIT on" in run.output.info["vm"]) is not jit_off


def run_probe_on(builds: dict, tmp_path: Path, mechanism: str, lua_source: str, iterations: int) -> Execution:
    """Run the real probe of `mechanism` on a benchmark file holding `lua_source`."""
    bench = tmp_path / "bench.lua"
    bench.write_text(lua_source)
    argv, env = command_for(STUDY, builds[mechanism], "queens", "6", iterations)
    argv[argv.index(str(STUDY.dir / "benchmarks/queens.lua"))] = str(bench)
    return execute(argv, env, STUDY.dir, iterations, 60)


def test_probe_refuses_a_benchmark_without_run(builds: dict, tmp_path: Path) -> None:
    run = run_probe_on(builds, tmp_path, "lua54", "return { nope = 1 }\n", 2)
    assert run.status == CRASHED
    assert "must return a table with a run(param) function" in run.detail


def test_probe_catches_an_answer_that_changes_between_iterations(builds: dict, tmp_path: Path) -> None:
    flaky = "local n = 0\nreturn { run = function() n = n + 1; return tostring(n) end }\n"
    run = run_probe_on(builds, tmp_path, "luajit", flaky, 3)
    assert run.status == CRASHED
    assert "answered differently" in run.detail


def test_probe_output_escapes_json(builds: dict, tmp_path: Path) -> None:
    odd = 'return { run = function() return "q\\"uote\\\\ tab\\t nl\\n" end }\n'
    run = run_probe_on(builds, tmp_path, "lua51", odd, 1)
    assert run.status == OK, run.detail
    assert run.output.answer == 'q"uote\\ tab\t nl\n'


@pytest.mark.skipif(shutil.which("luajit") is None, reason="luajit is not installed")
def test_a_small_real_campaign(tmp_path: Path) -> None:
    result = bridgebench("run", "lua-vms", "--quick", "--benchmarks", "queens,json", "--mechanisms",
                         "lua54,luajit,luajit-joff", "--json", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["baseline"] == "luajit"
    assert len(report["cells"]) == 6
    for cell in report["cells"]:
        assert cell["executions_ok"] == 3  # the quick budget's: the fewest that give an interval
        perf = cell["steady_performance"]
        assert perf["low"] <= perf["value"] <= perf["high"]
        assert "too few iterations for changepoints" in cell["method"]  # 5 iterations, and it says so
        assert cell["ratio"]["low"] <= cell["ratio"]["value"] <= cell["ratio"]["high"]
    assert (tmp_path / "results" / "lua-vms-1.md").read_text().startswith("# bridgebench: lua-vms")



def test_probe_reports_a_benchmarks_batch_and_rejects_a_bad_one(builds: dict, tmp_path: Path) -> None:
    batched = "return { batch = 1000, run = function() return 'x' end }\n"
    run = run_probe_on(builds, tmp_path, "luajit", batched, 2)
    assert run.status == OK, run.detail
    assert run.output.batch == 1000  # the harness divides by it: figures per call
    run = run_probe_on(builds, tmp_path, "lua54", "return { batch = 0.5, run = function() return 'x' end }\n", 1)
    assert run.status == CRASHED
    assert "batch must be a positive integer" in run.detail
