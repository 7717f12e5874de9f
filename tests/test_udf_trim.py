"""The udf-trim study through the harness: real Go loaders built by the study file, the batch the answer
check calibrates reused by the timed runs, and the Go probe's allocation counters in the report."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import bridgebench


@pytest.mark.skipif(shutil.which("go") is None and not Path(".venv/bin/go").exists(), reason="no Go toolchain")
def test_a_small_udf_trim_campaign(tmp_path: Path) -> None:
    result = bridgebench("run", "udf-trim", "--quick", "--benchmarks", "trim-small,encode-large", "--mechanisms",
                         "native,gopherlua-pooled,luajit-table", "--json", cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["cells"]) == 6
    for cell in report["cells"]:
        assert cell["executions_ok"] == 2
        assert cell["counters"]["bytes_per_op"] > 0  # every loader allocates to build the JSON answer
        assert cell["steady_performance"]["value"] < 0.1  # per call, not per batch of calls
    db = tmp_path / "results" / "bridgebench.sqlite"
    with sqlite3.connect(db) as conn:
        checked = dict(((b, m), k) for b, m, k in conn.execute("SELECT benchmark, mechanism, batch FROM check_answer"))
        ran = conn.execute("SELECT benchmark, mechanism, batch FROM execution").fetchall()
    assert checked[("trim-small", "native")] > 1  # a call of microseconds: the probe batched it
    assert all(k == checked[(b, m)] for b, m, k in ran)  # every timed run reused the calibrated batch
