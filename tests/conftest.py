from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def basic_study(tmp_path: Path) -> Path:
    """A copy of the fixture study (with its probe beside it) that a test may edit."""
    shutil.copy(FIXTURES / "probe.py", tmp_path / "probe.py")
    shutil.copytree(FIXTURES / "study-basic", tmp_path / "study-basic")
    return tmp_path / "study-basic" / "study.toml"


def add_benchmark(study_file: Path, name: str, param: int = 20000, check_param: int = 100) -> None:
    with study_file.open("a") as f:
        f.write(f"\n[benchmarks.{name}]\nparam = {param}\ncheck_param = {check_param}\n")
