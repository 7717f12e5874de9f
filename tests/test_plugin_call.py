"""plugin-call through the harness: the seed's unfetchable mechanisms are reported unavailable with the
module proxy's reason, never dropped; the available ones agree on the contract."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.test_campaign import bridgebench


@pytest.mark.skipif(shutil.which("go") is None and not Path(".venv/bin/go").exists(), reason="no Go toolchain")
def test_unfetchable_mechanisms_are_listed_with_the_reason(tmp_path: Path) -> None:
    result = bridgebench("build", "plugin-call", "--mechanisms", "direct,pie,goloader", "--json", cwd=tmp_path,
                         timeout=600)
    assert result.returncode == 0, result.stderr
    builds = {b["mechanism"]: b for b in json.loads(result.stdout)}
    assert builds["direct"]["available"]
    for name in ("pie", "goloader"):
        assert not builds[name]["available"]
        assert "Go module proxy does not serve" in builds[name]["reason"] or "can be fetched now" in \
            builds[name]["reason"]


@pytest.mark.skipif(shutil.which("luajit") is None, reason="luajit is not installed")
def test_luajit_ffi_into_go_agrees_with_the_go_mechanisms(tmp_path: Path) -> None:
    result = bridgebench("check", "plugin-call", "--mechanisms", "direct,cgo,luajit-ffi", "--benchmarks",
                         "int,bytes-64", "--json", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {r["status"] for r in rows} == {"agrees"}
    assert {r["batch"] for r in rows if r["mechanism"] == "luajit-ffi"} == {10000}  # the FFI benchmark's batch
