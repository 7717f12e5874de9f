"""docs/writing-a-study.md's example, walked as the doc says from a folder outside the checkout: the doc
shows the example's files as they are in docs/example-study, and its commands check and run it."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BRIDGEBENCH, REPO

DOC = (REPO / "docs" / "writing-a-study.md").read_text(encoding="utf-8")
EXAMPLE = REPO / "docs" / "example-study"
SECTION = DOC[DOC.index("## Your first study, outside the checkout"):DOC.index("## The study file, key by key")]


def test_the_doc_shows_the_example_files_as_they_are() -> None:
    blocks = [b.strip("\n") for b in re.findall(r"^```(?:toml|lua|c)\n(.*?)^```", SECTION, re.MULTILINE | re.DOTALL)]
    for name in ("study.toml", "trim.lua", "trim_ffi.lua", "trim.c"):
        assert (EXAMPLE / name).read_text().strip("\n") in blocks, f"{name} differs from the doc's copy"


def test_the_example_checks_and_runs_with_the_docs_commands_from_outside_the_checkout(tmp_path: Path) -> None:
    if not all(shutil.which(c) for c in ("lua5.4", "luajit", "cc")):
        pytest.skip("the example needs lua5.4, luajit and a C compiler (scripts/install.sh installs them)")
    (commands,) = re.findall(r"^```sh\n(.*?)^```", SECTION, re.MULTILINE | re.DOTALL)
    study = tmp_path / "trim"
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    done = []
    for line in commands.strip().splitlines():
        command = line.split("  #")[0].strip()
        command = command.replace("/tmp/trim", str(study)).replace("docs/example-study", str(EXAMPLE))
        command = command.replace(".venv/bin/bridgebench", shlex.join(BRIDGEBENCH))
        run = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=600,
                             env=os.environ | {"COLUMNS": "200", "PYTHONPATH": str(REPO)})
        assert run.returncode == 0, f"{line}: {run.stderr[-2000:]}"
        done.append(run)
    assert len(done) == 4
    assert "every available mechanism gave the same answer on 1 benchmark" in done[1].stderr
    assert (study / "build" / "trim" / "luajit-ffi" / "libtrim.so").is_file()  # beside the study
    assert not (cwd / "build").exists()
    for run in done[2:]:
        assert run.stdout.startswith("LuaJIT FFI into C vs LuaJIT, 1 benchmark: ")
        assert "Lua 5.4 vs LuaJIT, 1 benchmark: " in run.stdout
