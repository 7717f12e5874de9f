from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bridgebench.store import SCHEMA_VERSION, Store, StoreError


def test_a_version_1_store_gains_the_batch_column(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:  # make it look like a store written by schema 1
        db.execute("ALTER TABLE check_answer DROP COLUMN batch")
        db.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    store = Store(path)
    columns = [r[1] for r in store.db.execute("PRAGMA table_info(check_answer)")]
    assert "batch" in columns
    assert store.db.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)


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
