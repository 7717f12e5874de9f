"""The store's SQLite backend: one file (WAL), locks as flock files beside it (`<store>.locks/`), and the
forward migrations of the schemas SQLite stores were written with before PostgreSQL was a choice."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from bridgebench.locks import FileLock
from bridgebench.store.encoding import SECONDS, to_blob

SCALARS = {"id": "INTEGER PRIMARY KEY", "int": "INTEGER", "real": "REAL", "blob": "BLOB",
           "without_rowid": " WITHOUT ROWID", "order": ""}
ORDER = "rowid"  # the column that keeps insertion order
BEGIN = "BEGIN IMMEDIATE"  # take the write lock at once: a busy store fails here, not mid-transaction
DATABASE_ERRORS: tuple[type[Exception], ...] = (sqlite3.DatabaseError,)
WRITE_ERRORS: tuple[type[Exception], ...] = (sqlite3.OperationalError,)
BIND_ERRORS: tuple[type[Exception], ...] = (sqlite3.InterfaceError, OverflowError)
UNIQUE_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
# What each schema version added; an older store is migrated forward when it is opened.
_AUDIT_COLUMNS = ("cpu_s REAL", "others_cpu_s REAL", "steal_s REAL", "load1 REAL", "waited_s REAL", "disturbed TEXT")


def busy_timeout_s() -> float:
    """How long a write waits for another writer before it fails (BRIDGEBENCH_STORE_BUSY_S, default 30)."""
    try:
        return max(0.0, float(os.environ.get("BRIDGEBENCH_STORE_BUSY_S", "30")))
    except ValueError:
        return 30.0


class Backend:
    SCALARS, ORDER, BEGIN = SCALARS, ORDER, BEGIN
    DATABASE_ERRORS, WRITE_ERRORS = DATABASE_ERRORS, WRITE_ERRORS
    BIND_ERRORS, UNIQUE_ERRORS = BIND_ERRORS, UNIQUE_ERRORS

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        self.location = str(self.path)

    def missing(self) -> str | None:
        """Why there is no store to read here (None: there is one)."""
        return None if self.path.is_file() else "no store there (run a campaign first, or name one with --store)"

    def connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None, timeout=busy_timeout_s())
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        return db

    @staticmethod
    def sql(query: str) -> str:
        return query

    @staticmethod
    def create_tables(db: sqlite3.Connection, schema: str) -> None:
        db.executescript(schema)  # CREATE … IF NOT EXISTS: nothing happens to a store that has them

    def lock(self, name: str, blocking: bool) -> FileLock:
        return FileLock(self.path.with_name(f"{self.path.name}.locks") / name).acquire(blocking=blocking)

    @staticmethod
    def migrate(db: sqlite3.Connection, version: int) -> None:
        """Bring a store written by schema `version` to the current one (inside a transaction)."""
        if version < 2:  # the calibrated batch size of the answer check
            _add_columns(db, "check_answer", ("batch INTEGER",))
        if version < 3:  # the disturbance audit of each execution
            _add_columns(db, "execution", _AUDIT_COLUMNS)
        if version < 4:  # iterations as one typed array per execution
            _migrate_iterations(db)
        if version < 5:  # the machine that ran each execution (a fleet's workers)
            _add_columns(db, "execution", ("machine TEXT",))
        if version < 7:  # iterations sized per cell to a time per execution
            _add_columns(db, "check_answer", ("iterations INTEGER",))
        if version < 9:  # whether each cell's probe speaks the stepped mode (lock-step blocks)
            _add_columns(db, "check_answer", ("stepped INTEGER",))
        if version < 11:  # the projection that made a benchmark wait (nearest first), out of the reasons' text
            _add_columns(db, "cell_decision", ("wait_projection_s REAL",))


def _add_columns(db: sqlite3.Connection, table: str, columns: tuple[str, ...]) -> None:
    have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    for column in columns:
        if column.split()[0] not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")


def _migrate_iterations(db: sqlite3.Connection) -> None:
    """Schema 4: the per-iteration rows of schemas 1-3 (tables iteration, iteration_counter) become one
    float64 BLOB per execution and quantity; the same numbers, read back bit for bit."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "iteration" in tables:
        ids = [r[0] for r in db.execute("SELECT DISTINCT execution_id FROM iteration")]
        for eid in ids:
            values = [r[0] for r in db.execute("SELECT seconds FROM iteration WHERE execution_id=? ORDER BY idx",
                                               (eid,))]
            db.execute("INSERT OR REPLACE INTO series VALUES (?, ?, ?)", (eid, SECONDS, to_blob(values)))
        db.execute("DROP TABLE iteration")
    if "iteration_counter" in tables:
        keys = db.execute("SELECT DISTINCT execution_id, name FROM iteration_counter").fetchall()
        for eid, name in keys:
            values = [r[0] for r in db.execute("SELECT value FROM iteration_counter WHERE execution_id=? AND name=?"
                                               " ORDER BY idx", (eid, name))]
            db.execute("INSERT OR REPLACE INTO series VALUES (?, ?, ?)", (eid, name, to_blob(values)))
        db.execute("DROP TABLE iteration_counter")
