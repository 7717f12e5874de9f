"""docs/ci.md's CI jobs, run as written on a project that keeps its study outside bridgebench's repository,
with bridgebench installed as a CI job installs it (a wheel of this checkout in a fresh environment, no
checkout beside it): on main they count the study and keep a baseline file; on a pull request they count it
again and gate on the baseline. A planted +0.5 % of work fails the gate (exit 7, "slower" in the summary);
the same code passes. The GitHub and GitLab jobs run the same bridgebench commands."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO

DOC = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
STUDY = """
[study]
name = "project-bench"
baseline = "work"

[budget]
process_executions = 3
iterations = 5
timeout_s = 300

[mechanisms.work]
commands = ["cc"]
build = ["cc -O2 -o {build}/planted {probes}/c/planted.c"]
build_inputs = ["{probes}/c/planted.c", "{probes}/c/bbcount.h", "{probes}/c/bbstep.h"]
run = ["{build}/planted", "{iterations}", "{param}"]
env = { PLANTED_SCALE = "@SCALE@" }   # the project's code: a pull request may make it do more work

[benchmarks.loop]
param = "20000"
"""


def commands(kind: str) -> list[str]:
    """The bridgebench commands of a job in docs/ci.md, in order (GitLab's shell conditions taken off)."""
    (block,) = re.findall(rf"## {kind}\n```yaml\n(.*?)```", DOC, re.DOTALL)
    if kind == "GitHub Actions":
        lines = re.findall(r"^\s+(?:- )?run: (.*)$", block, re.MULTILINE)
    else:
        lines = re.findall(r"^\s+- (.*)$", block.split("script:", 1)[1].split("artifacts:", 1)[0], re.MULTILINE)
        lines = [re.sub(r"^if \[.*?\]; then (.*); fi$", r"\1", line) for line in lines]
    return [line for line in lines if line.startswith(("bridgebench ", "pip install "))]


def test_the_github_and_gitlab_jobs_run_the_same_commands_from_a_pinned_release() -> None:
    github, gitlab = commands("GitHub Actions"), commands("GitLab CI")
    assert github == gitlab and len(github) == 4
    assert re.search(r"@v\d+\.\d+\.\d+\"$", github[0])  # a pinned release, not a branch


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bridgebench as `pip install` puts it in a CI job: a wheel built from this checkout, installed into a fresh
    environment with no checkout around it (its dependencies are this environment's, added by a .pth file:
    nothing is downloaded). The folder holding its `bridgebench` command."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"  # a copy, so that building leaves nothing in the checkout
    for part in ("bridgebench", "probes"):
        shutil.copytree(REPO / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(root / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    (wheel,) = (root / "dist").glob("bridgebench-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import bridgebench.study as s; print(s.PROBES_DIR)"],
                           check=True, capture_output=True, text=True, cwd=root).stdout.strip()
    assert where == str(venv / "share" / "bridgebench" / "probes")  # not the checkout's
    return venv / "bin"


def job(project: Path, scale: str, baseline: Path | None, installed: Path) -> tuple[int, Path]:
    """One CI job in a fresh workspace of the project (its own store, as a runner has): main's when there is
    no baseline yet, a pull request's with it. Its exit status, and the workspace."""
    work = project.parent / f"job-{scale}-{'pr' if baseline else 'main'}"
    shutil.copytree(project, work)
    (work / "bench" / "study.toml").write_text(STUDY.replace("@SCALE@", scale))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {
        "PATH": f"{installed}:{os.environ['PATH']}", "COLUMNS": "200"}
    if baseline:
        shutil.copy(baseline, work / "baseline.bbx")  # the artifact main's job uploaded
    steps = commands("GitHub Actions")[1:]  # bridgebench itself is installed already: `installed`
    steps = [s for s in steps if (" export " in s) != bool(baseline) or " run " in s]
    status = 0
    for step in steps:
        done = subprocess.run(["bash", "-c", step], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        status = done.returncode
        if status not in (0, 7):
            pytest.fail(f"{step}: exit {status}: {done.stderr[-1500:]}")
    return status, work


def test_the_gate_fails_on_a_planted_half_percent_and_passes_the_same_code(tmp_path: Path, installed: Path) -> None:
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        pytest.skip("counting needs valgrind and a C compiler (scripts/install.sh installs them)")
    project = tmp_path / "project"
    (project / "bench").mkdir(parents=True)
    status, main = job(project, "1", None, installed)
    assert status == 0 and (main / "baseline.bbx").is_file()
    same, unchanged = job(project, "1", main / "baseline.bbx", installed)
    summary = (unchanged / "summary.md").read_text()
    assert same == 0 and "Nothing changed" in summary and "equivalent" in summary
    slower, changed = job(project, "1.005", main / "baseline.bbx", installed)
    summary = (changed / "summary.md").read_text()
    assert slower == 7, summary
    assert "## What changed" in summary and "| loop | slower | ×1.00495 (" in summary  # 0.5 % more work, counted
