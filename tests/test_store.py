from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bridgebench.runner import Execution, Task
from bridgebench.store import SCHEMA_VERSION, Store, StoreError

AUDIT = ("cpu_s", "others_cpu_s", "steal_s", "load1", "waited_s", "disturbed")


def test_a_version_1_store_gains_the_batch_and_audit_columns(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:  # make it look like a store written by schema 1
        db.execute("ALTER TABLE check_answer DROP COLUMN batch")
        for column in AUDIT:
            db.execute(f"ALTER TABLE execution DROP COLUMN {column}")
        db.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    store = Store(path)
    assert "batch" in [r[1] for r in store.db.execute("PRAGMA table_info(check_answer)")]
    assert set(AUDIT) <= {r[1] for r in store.db.execute("PRAGMA table_info(execution)")}
    assert store.db.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION) == "3"


def test_a_version_2_store_keeps_its_executions_and_reads_them_unaudited(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = Store(path)
    cid = store.create_campaign("x", "x", "h", {}, "sha", {}, "m", [Task(0, "b", "m", 0)])
    store.record_execution(cid, Task(0, "b", "m", 0), Execution("ok", "", 0, "", None, None, 0.0, 1.5))
    store.close()
    with sqlite3.connect(path) as db:
        for column in AUDIT:
            db.execute(f"ALTER TABLE execution DROP COLUMN {column}")
        db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    (stored,) = Store(path).executions(cid)
    assert stored.wall_s == 1.5 and stored.cpu_s is None and stored.disturbed is None


def test_a_store_from_the_future_or_not_a_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StoreError, match="store schema 99"):
        Store(path)
    junk = tmp_path / "junk.sqlite"
    junk.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable bridgebench store"):
        Store(junk)
