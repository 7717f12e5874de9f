from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bridgebench.protocol import ProbeOutput
from bridgebench.runner import Execution, Task
from bridgebench.store import SCHEMA_VERSION, SECONDS, Store, StoreError

AUDIT = ("cpu_s", "others_cpu_s", "steal_s", "load1", "waited_s", "disturbed")


def test_a_version_1_store_gains_the_batch_and_audit_columns(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:  # make it look like a store written by schema 1
        db.execute("ALTER TABLE check_answer DROP COLUMN batch")
        db.execute("ALTER TABLE check_answer DROP COLUMN iterations")
        db.execute("ALTER TABLE check_answer DROP COLUMN stepped")
        db.execute("ALTER TABLE cell_decision DROP COLUMN wait_projection_s")
        for column in (*AUDIT, "machine"):
            db.execute(f"ALTER TABLE execution DROP COLUMN {column}")
        db.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    store = Store(path)
    assert {"batch", "iterations", "stepped"} <= {r[1] for r in store.db.execute("PRAGMA table_info(check_answer)")}
    assert {*AUDIT, "machine"} <= {r[1] for r in store.db.execute("PRAGMA table_info(execution)")}
    assert "wait_projection_s" in {r[1] for r in store.db.execute("PRAGMA table_info(cell_decision)")}
    assert store.db.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION) == "11"


def test_a_version_7_store_gains_the_calibration_table(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:  # a store written before `bridgebench calibrate`
        db.execute("DROP TABLE calibration")
        db.execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    store = Store(path)
    assert store.calibration("m") is None
    store.record_calibration("m", 1.0, {"delta_relative": 0.03})
    store.record_calibration("m", 2.0, {"delta_relative": 0.05})
    assert store.calibration("m") == {"delta_relative": 0.05} and store.calibration("other") is None
    # a campaign is set against the calibration it was judged with, never a later one
    assert store.calibration("m", before=1.5) == {"delta_relative": 0.03} and store.calibration("m", 0.5) is None


def test_a_version_9_store_gains_the_speed_readings_and_a_copied_campaign_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:  # a store written before the reference loop's readings
        db.execute("DROP TABLE speed_reading")
        db.execute("UPDATE meta SET value='9' WHERE key='schema_version'")
    store = Store(path)
    cid = store.create_campaign("x", "x", "h", {}, "sha", {}, "m", [Task(0, "b", "m", 0)])
    assert store.speed_readings(cid) == []
    store.record_speed(cid, "m", 2.0, {"moment": "end", "iteration_s": 0.002})
    store.record_speed(cid, "m", 1.0, {"moment": "start", "iteration_s": 0.001})
    assert [r["moment"] for r in store.speed_readings(cid)] == ["start", "end"]  # oldest first
    copy = Store(tmp_path / "copy.sqlite")
    store.copy_campaign(cid, copy)
    assert copy.speed_readings(cid) == store.speed_readings(cid)


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


def _as_schema_3(path: Path) -> None:
    """Rewrite a store's iterations the way schemas 1-3 kept them: one row per iteration and counter value."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE iteration (execution_id INTEGER NOT NULL, idx INTEGER NOT NULL, seconds REAL NOT NULL,"
                   " PRIMARY KEY (execution_id, idx)) WITHOUT ROWID")
        db.execute("CREATE TABLE iteration_counter (execution_id INTEGER NOT NULL, name TEXT NOT NULL, idx INTEGER"
                   " NOT NULL, value REAL NOT NULL, PRIMARY KEY (execution_id, name, idx)) WITHOUT ROWID")
        for eid, name, data in db.execute("SELECT execution_id, name, data FROM series").fetchall():
            values = np.frombuffer(data, dtype="<f8").tolist()
            if name == SECONDS:
                db.executemany("INSERT INTO iteration VALUES (?, ?, ?)", [(eid, i, v) for i, v in enumerate(values)])
            else:
                db.executemany("INSERT INTO iteration_counter VALUES (?, ?, ?, ?)",
                               [(eid, name, i, v) for i, v in enumerate(values)])
        db.execute("DROP TABLE series")
        db.execute("DROP TABLE machine")
        db.execute("ALTER TABLE execution DROP COLUMN machine")
        db.execute("DELETE FROM analysis")
        db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")


def test_a_version_3_store_keeps_every_iteration_bit_for_bit_and_analyses_the_same(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = Store(path)
    tasks = [Task(i, "b", "m", i) for i in range(3)]
    cid = store.create_campaign("x", "x", "h", {}, "sha", {}, "m", tasks)
    rng = np.random.default_rng(3)
    written = {}
    for task in tasks:
        times = (1e-3 * (1 + 0.1 * rng.standard_normal(60)) + 1e-17 * task.pexec).tolist()
        counters = {"cpu_s": [t * 0.9 for t in times], "bytes_per_op": [float(task.pexec)] * 60}
        run = Execution("ok", "", 0, "", ProbeOutput(times, "1", 1, counters), None, 0.0, 1.0)
        written[store.record_execution(cid, task, run)] = (times, counters)
    store.close()
    _as_schema_3(path)
    migrated = Store(path)
    assert migrated.db.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION) == "11"
    tables = {r[0] for r in migrated.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "iteration" not in tables and "iteration_counter" not in tables
    for eid, (times, counters) in written.items():
        assert migrated.times(eid).tolist() == times
        for name, values in counters.items():
            assert migrated.counter(eid, name).tolist() == values
    assert migrated.iteration_count(cid) == 180
    assert migrated.counter(1, "absent").size == 0


def test_a_counter_cannot_take_the_name_of_the_iteration_times(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    cid = store.create_campaign("x", "x", "h", {}, "sha", {}, "m", [Task(0, "b", "m", 0)])
    run = Execution("ok", "", 0, "", ProbeOutput([1.0], "1", 1, {SECONDS: [2.0]}), None, 0.0, 1.0)
    with pytest.raises(ValueError, match="may not be named"):
        store.record_execution(cid, Task(0, "b", "m", 0), run)
    assert store.executions(cid) == []
