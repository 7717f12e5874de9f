"""Fixtures and helpers shared by the test modules."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parents[1]
BRIDGEBENCH = [sys.executable, "-m", "bridgebench.cli"]


def bridgebench(*args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    """The real command line, in a fresh process, as a user would run it."""
    return subprocess.run([*BRIDGEBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=os.environ | {"COLUMNS": "200", "PYTHONPATH": str(REPO)} | (env or {}))


def start_bridgebench(*args: str, cwd: Path, env: dict[str, str] | None = None, **popen: object
                      ) -> subprocess.Popen[str]:
    """The command line in the background, in its own process group (so a test can signal it as a
    terminal would)."""
    return subprocess.Popen([*BRIDGEBENCH, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            env=os.environ | {"PYTHONPATH": str(REPO)} | (env or {}), **popen)  # type: ignore[arg-type]


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


def chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on a file with a fresh profile, or skip the test when there is none."""
    exe = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if exe is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="bb-chromium-") as profile:
        done = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def rows(db: Path, query: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(query).fetchall()


def wait_for_executions(db: Path, at_least: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            try:
                if rows(db, "SELECT count(*) FROM execution")[0][0] >= at_least:
                    return
            except sqlite3.OperationalError:
                pass
        time.sleep(0.05)
    raise AssertionError("the campaign stored too few executions in time")


def gated_campaign(study: Path, cwd: Path, after: int, extra: tuple[str, ...] = ()
                   ) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """A campaign of 10 executions (5 × 2 mechanisms × 5 iterations; or as `extra` options say) whose timed
    executions stop at a gate after the first `after` of them: a test interrupts it at a known point,
    whatever the machine's speed. Returns the process and the environment that opens the gate for a resume
    once the gate file exists."""
    add_benchmark(study, "gate")
    env = {"PROBE_GATE": str(cwd / "gate"), "PROBE_GATE_AFTER": str(after)}
    pexecs = () if extra else ("-p", "5")
    proc = start_bridgebench("run", str(study), "--benchmarks", "gate", *pexecs, "-i", "5", *extra, cwd=cwd,
                             env=env)
    wait_for_executions(cwd / "results" / "bridgebench.sqlite", after)
    return proc, env


@pytest.fixture
def basic_study(tmp_path: Path) -> Path:
    """A copy of the fixture study (with its probe beside it) that a test may edit."""
    shutil.copy(FIXTURES / "probe.py", tmp_path / "probe.py")
    shutil.copytree(FIXTURES / "study-basic", tmp_path / "study-basic")
    return tmp_path / "study-basic" / "study.toml"


def add_benchmark(study_file: Path, name: str, param: int = 20000, check_param: int = 100) -> None:
    with study_file.open("a") as f:
        f.write(f"\n[benchmarks.{name}]\nparam = {param}\ncheck_param = {check_param}\n")
