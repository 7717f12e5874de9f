"""The portable baseline (bridgebench/baseline.py): a campaign exported to a file of its own is diffed from
another store as the campaign itself would be (the same verdicts and intervals, the machine and metric checks
kept); a file that is not a baseline, a truncated one or one of a newer format is a one-line error."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import add_benchmark, bridgebench, copy_basic_study


@pytest.fixture(scope="module")
def planted_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two campaigns of planted times (known verdicts at any machine speed) in one store, the first also
    exported to base.bbx: made once, as each test's copy (planted) starts from the same two campaigns."""
    work = tmp_path_factory.mktemp("planted")
    study = copy_basic_study(work)
    add_benchmark(study, "twice")
    add_benchmark(study, "constant")
    for _ in range(2):
        ran = bridgebench("run", str(study), "-p", "3", "-i", "12", "--benchmarks", "twice,constant", cwd=work)
        assert ran.returncode == 0, ran.stderr
    done = bridgebench("export", "1", "-o", "base.bbx", cwd=work)
    assert done.returncode == 0, done.stderr
    assert "base.bbx: campaign 1" in done.stdout
    return work


@pytest.fixture
def planted(planted_once: Path, tmp_path: Path) -> Path:
    """A copy of the two campaigns and base.bbx in this test's folder, which it may change or move away (as a
    CI job only has the file)."""
    shutil.copytree(planted_once, tmp_path, dirs_exist_ok=True)
    return tmp_path / "base.bbx"


def verdicts(done: object) -> dict[str, tuple[str, float]]:
    data = json.loads(done.stdout)  # type: ignore[attr-defined]
    return {c["benchmark"]: (c["verdict"], round(c["ratio"]["value"], 9)) for c in data["comparisons"]}


def test_a_baseline_file_diffs_as_its_campaign_does(planted: Path, tmp_path: Path) -> None:
    from_store = bridgebench("diff", "1:a", "2:b", "--json", cwd=tmp_path)
    from_file = bridgebench("diff", "base.bbx:a", "2:b", "--json", cwd=tmp_path)
    assert from_store.returncode == from_file.returncode == 0, from_file.stderr
    assert verdicts(from_file) == verdicts(from_store)
    assert verdicts(from_file)["twice"][0] == "slower" and verdicts(from_file)["constant"][0] == "equivalent"
    assert json.loads(from_file.stdout)["header"].startswith("A = base.bbx (campaign 1) (basic), B = campaign 2")
    # the gate reads it too, and a file on both sides works without any store
    gated = bridgebench("diff", "base.bbx:a", "2:b", "--fail-on", "slower", cwd=tmp_path)
    assert gated.returncode == 7 and "twice" in gated.stderr
    (tmp_path / "results" / "bridgebench.sqlite").rename(tmp_path / "elsewhere.sqlite")
    alone = bridgebench("diff", "base.bbx:a", "base.bbx:b", "--json", cwd=tmp_path)
    assert alone.returncode == 0, alone.stderr
    assert verdicts(alone)["twice"][0] == "slower"


def test_a_baseline_from_another_machine_is_refused_unless_told(planted: Path, tmp_path: Path) -> None:
    with sqlite3.connect(planted) as conn:
        conn.execute("UPDATE campaign SET machine='elsewhere', environment_json=json_set(environment_json,"
                     " '$.hostname', 'ci-runner')")
    refused = bridgebench("diff", "base.bbx", "2", cwd=tmp_path)
    assert refused.returncode == 2 and "ci-runner" in refused.stderr and "--cross-machine" in refused.stderr
    assert bridgebench("diff", "base.bbx", "2", "--cross-machine", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("damage", ["garbage", "truncated", "a store", "newer", "two campaigns", "missing"])
def test_a_wrong_baseline_file_is_one_line_and_exit_2(planted: Path, tmp_path: Path, damage: str) -> None:
    bad = tmp_path / "bad.bbx"
    if damage == "garbage":
        bad.write_text("this is not a database\n" * 100)
    elif damage == "truncated":
        data = planted.read_bytes()
        bad.write_bytes(data[:len(data) // 2])
    elif damage == "a store":
        bad = tmp_path / "results" / "bridgebench.sqlite"  # a store, but not a baseline file
    elif damage in ("newer", "two campaigns"):
        bad.write_bytes(planted.read_bytes())
        with sqlite3.connect(bad) as conn:
            if damage == "newer":
                conn.execute("UPDATE meta SET value='99' WHERE key='baseline_format'")
            else:
                conn.execute("INSERT INTO campaign SELECT id + 1, study, study_path, config_hash, config_json, git_sha,"
                             " environment_json, machine, created, finished, state FROM campaign")
    done = bridgebench("diff", str(bad) if damage != "missing" else "gone.bbx", "2", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert {"garbage": "not a bridgebench baseline", "truncated": "bad.bbx", "a store": "not a baseline file",
            "newer": "baseline format 99", "two campaigns": "holds one campaign, this one 2",
            "missing": "no such baseline file"}[damage] in done.stderr


def test_export_refuses_to_overwrite_and_names_a_missing_campaign(planted: Path, tmp_path: Path) -> None:
    again = bridgebench("export", "1", "-o", "base.bbx", cwd=tmp_path)
    assert again.returncode == 2 and "exists" in again.stderr
    missing = bridgebench("export", "9", "-o", "other.bbx", cwd=tmp_path)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "other.bbx").exists() and not (tmp_path / "other.bbx.partial").exists()
