"""The luajit-next study (next(), pairs(), pairs() with an FFI value, ipairs() on Debian's LuaJIT and
OpenResty's luajit2, JIT on and off): every mechanism builds and agrees, a malformed parameter is one
clear error, and its report says what each VM's compiler did with each loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridgebench.build import build_study
from bridgebench.campaign.timing import check, command_for
from bridgebench.runner import CRASHED, execute
from bridgebench.study import STUDIES_DIR, read_study
from tests.conftest import bridgebench

STUDY = read_study(STUDIES_DIR / "luajit-next" / "study.toml")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return build_study(STUDY, tmp_path_factory.mktemp("build"))


def test_every_mechanism_builds_and_agrees_on_every_loop(builds: dict) -> None:
    assert {m: b.reason for m, b in builds.items() if not b.available} == {}
    rows = check(STUDY, builds, tuple(STUDY.benchmarks), 120)
    assert len(rows) == len(STUDY.benchmarks) * len(STUDY.mechanisms)
    assert [r for r in rows if r.status != "agrees"] == []
    answers = {r.benchmark: r.answer for r in rows}
    assert answers["pairs-ffi-seq"] == answers["pairs-seq"] + "ULL"  # the same sum, as a uint64_t
    assert answers["next-mixed"] == answers["pairs-mixed"] != answers["next-seq"]


@pytest.mark.parametrize(("param", "why"), [("while/seq/2", "PARAM must be FORM/KEYS/LOOPS"),
                                            ("next/ring/2", "KEYS must be seq, hash or mixed")])
def test_a_malformed_parameter_is_one_clear_error(builds: dict, param: str, why: str) -> None:
    argv, env = command_for(STUDY, builds["luajit"], "next-seq", param, 2)
    run = execute(argv, env, STUDY.dir, 2, 60)
    assert run.status == CRASHED and why in run.stderr_tail


def test_the_report_says_which_loops_the_compiler_took(tmp_path: Path) -> None:
    done = bridgebench("run", "luajit-next", "--quick", "--benchmarks", "pairs-ffi-seq,next-hash", "--store",
                       str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path / "results"), "--build-dir",
                       str(tmp_path / "build"), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(next((tmp_path / "results").glob("luajit-next-*.json")).read_text())
    cells = {(c["benchmark"], c["mechanism"]): c for c in report["cells"]}
    for bench in ("pairs-ffi-seq", "next-hash"):
        for vm in ("luajit", "luajit2"):
            assert cells[(bench, vm)]["jit"]["executions"] == 3
            assert all(r["jit"]["traces"] >= 1 for r in cells[(bench, vm)]["per_execution"])
            assert cells[(bench, f"{vm}-joff")]["jit"] is None  # the interpreter has nothing to record
    assert "## What LuaJIT's compiler did" in next((tmp_path / "results").glob("luajit-next-*.md")).read_text()
