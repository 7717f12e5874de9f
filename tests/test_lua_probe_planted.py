"""The Lua probe's planted work (BRIDGEBENCH_EXTRA_SHARE): a twin of a VM that does more real work of the same
kind and still answers as the VM does (lua-vms's luajit-plus2, the default's power on a real JIT)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

INCLUDE = {"lua5.1": "/usr/include/lua5.1", "lua5.4": "/usr/include/lua5.4", "luajit": "/usr/include/luajit-2.1"}


def probe(lua: str, tmp_path: Path, param: str, **env: str) -> subprocess.CompletedProcess[str]:
    if shutil.which(lua) is None or shutil.which("cc") is None or not Path(INCLUDE[lua]).is_dir():
        pytest.skip(f"{lua}, its headers or a C compiler is not installed")
    if not (tmp_path / "bbclock.so").exists():
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{INCLUDE[lua]}", str(REPO / "probes/lua/bbclock.c"),
                        "-o", str(tmp_path / "bbclock.so")], check=True)
    bench = tmp_path / "bench.lua"
    calls = tmp_path / "calls.txt"
    # run(n) notes each size it is called with, outside any figure the test looks at
    bench.write_text(f"""return {{run = function(n)
  local f = assert(io.open({str(calls)!r}, "a")) f:write(n, " ") f:close()
  local s = 0 for i = 1, n do s = s + i end return tostring(s) end}}
""")
    calls.write_text("")
    return subprocess.run([lua, str(REPO / "probes/lua/probe.lua"), str(bench), "3", param], capture_output=True,
                          text=True, env={"PATH": os.environ["PATH"], "LUA_CPATH": f"{tmp_path}/?.so", "LUA_PATH": "",
                                          **env}, timeout=60, check=False)


@pytest.mark.parametrize("lua", ["lua5.1", "lua5.4", "luajit"])
def test_planted_work_runs_the_benchmark_again_at_its_share_and_keeps_the_answer(lua: str, tmp_path: Path) -> None:
    plain = probe(lua, tmp_path, "1000")
    assert plain.returncode == 0, plain.stderr
    assert (tmp_path / "calls.txt").read_text().split() == ["1000"] * 3
    planted = probe(lua, tmp_path, "1000", BRIDGEBENCH_EXTRA_SHARE="0.02")
    assert planted.returncode == 0, planted.stderr
    assert (tmp_path / "calls.txt").read_text().split() == ["1000", "20"] * 3
    assert json.loads(planted.stdout)["answer"] == json.loads(plain.stdout)["answer"] == "500500"
    tiny = probe(lua, tmp_path, "10", BRIDGEBENCH_EXTRA_SHARE="0.02")  # at least one unit of work
    assert tiny.returncode == 0 and (tmp_path / "calls.txt").read_text().split() == ["10", "1"] * 3


@pytest.mark.parametrize(("share", "param"), [("1.5", "1000"), ("two", "1000"), ("0.02", "big")])
def test_planted_work_refuses_a_share_or_a_size_it_cannot_scale(share: str, param: str, tmp_path: Path) -> None:
    done = probe("luajit", tmp_path, param, BRIDGEBENCH_EXTRA_SHARE=share)
    assert done.returncode == 2
    assert done.stderr.startswith("probe: BRIDGEBENCH_EXTRA_SHARE needs a share between 0 and 1 and a numeric size")
    assert (tmp_path / "calls.txt").read_text() == ""
