"""`bridgebench diff` end to end on the fixture study: campaigns and mechanisms, and the refusal to
compare runs from different machines."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import bridgebench


def _two_campaigns(basic_study: Path, tmp_path: Path) -> Path:
    for _ in range(2):
        result = bridgebench("run", str(basic_study), "-i", "12", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    return tmp_path / "results" / "bridgebench.sqlite"


def test_diff_two_campaigns_and_two_mechanisms(basic_study: Path, tmp_path: Path) -> None:
    _two_campaigns(basic_study, tmp_path)
    result = bridgebench("diff", "1", "2", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {c["benchmark"] for c in data["comparisons"]} == {"ok"}
    assert len(data["comparisons"]) == 2  # mechanisms a and b, each against itself
    for c in data["comparisons"]:
        assert c["verdict"] in ("improved", "worsened", "different", "unchanged")
        assert c["ratio"]["low"] <= c["ratio"]["value"] <= c["ratio"]["high"]
    result = bridgebench("diff", "1:a", "1:b", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "overall:" in result.stdout


def test_diff_refuses_different_machines_unless_told(basic_study: Path, tmp_path: Path) -> None:
    db = _two_campaigns(basic_study, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE campaign SET machine='elsewhere', environment_json=json_set(environment_json,"
                     " '$.hostname', 'other-host') WHERE id=2")
    result = bridgebench("diff", "1", "2", cwd=tmp_path)
    assert result.returncode == 2
    assert "do not compare" in result.stderr and "other-host" in result.stderr
    assert "--cross-machine" in result.stderr
    result = bridgebench("diff", "1", "2", "--cross-machine", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "DIFFERENT MACHINES" in result.stdout


def test_diff_rejects_a_malformed_side(tmp_path: Path) -> None:
    result = bridgebench("diff", "x", "2", cwd=tmp_path)
    assert result.returncode == 2
    assert "expected CAMPAIGN or CAMPAIGN:MECHANISM" in result.stderr
