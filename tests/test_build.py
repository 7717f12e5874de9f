"""Builds (bridgebench/build.py): two harnesses that build one study at once (two campaigns, two test
workers) do not remove each other's files; one builds, the other waits and finds the build cached."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import start_bridgebench

STUDY = """
[study]
name = "slow-build"
baseline = "a"

[budget]
process_executions = 1
iterations = 1

[mechanisms.a]
commands = ["python3"]
build = ["echo built >> {study}/builds.log && sleep 1 && echo ok > {build}/made"]
run = ["python3", "-c", "print(1)"]

[benchmarks.one]
param = 1
"""


def test_two_harnesses_building_one_study_at_once_build_it_once(tmp_path: Path) -> None:
    study = tmp_path / "slow-build"
    study.mkdir()
    (study / "study.toml").write_text(STUDY)
    builds = tmp_path / "build"
    both = [start_bridgebench("build", str(study / "study.toml"), "--build-dir", str(builds), cwd=tmp_path)
            for _ in range(2)]
    for proc in both:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert (study / "builds.log").read_text() == "built\n"  # the second waited and found it cached
    assert (builds / "slow-build" / "a" / "made").read_text() == "ok\n"


def test_an_outside_study_builds_beside_itself_not_in_the_current_folder(tmp_path: Path) -> None:
    from tests.conftest import bridgebench

    study = tmp_path / "elsewhere" / "slow-build"
    study.mkdir(parents=True)
    (study / "study.toml").write_text(STUDY)
    cwd = tmp_path / "somewhere-else"
    cwd.mkdir()
    done = bridgebench("build", str(study / "study.toml"), cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert (study / "build" / "slow-build" / "a" / "made").is_file()
    assert not (cwd / "build").exists()
