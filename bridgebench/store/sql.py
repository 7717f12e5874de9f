"""The results store: one transaction per process execution, in SQLite (a file) or PostgreSQL (a
server many machines share). The SQL is written here once, in the subset both speak; what differs (how to
connect, column types, locks, migrations of old files) is the backend's: sqlite.py, postgres.py.

An interrupt or a crash of the harness loses at most the execution in flight; everything committed
stays, and a resumed campaign runs exactly the planned executions that are not stored yet.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bridgebench import locks
from bridgebench.build import BuildResult
from bridgebench.runner import Execution, Task
from bridgebench.store import postgres as store_postgres
from bridgebench.store import sqlite as store_sqlite
from bridgebench.store.encoding import FLOAT64, SECONDS, from_blob, to_blob

SCHEMA_VERSION = 11

_SCHEMA = """  -- {id}, {int}… are the backend's column types (store_*.SCALARS)
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaign (
    id {id},
    study TEXT NOT NULL,
    study_path TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    config_json TEXT NOT NULL,      -- the study file as parsed, the budget and the options of the run
    git_sha TEXT NOT NULL,
    environment_json TEXT NOT NULL,
    machine TEXT NOT NULL,
    created {real} NOT NULL,
    finished {real},
    state TEXT NOT NULL CHECK (state IN ('running', 'interrupted', 'done'))
);
CREATE TABLE IF NOT EXISTS mechanism_build (
    campaign_id {int} NOT NULL REFERENCES campaign(id),
    mechanism TEXT NOT NULL,
    label TEXT NOT NULL,
    available {int} NOT NULL,
    reason TEXT NOT NULL,
    version TEXT NOT NULL,
    build_hash TEXT NOT NULL{order},
    PRIMARY KEY (campaign_id, mechanism)
);
CREATE TABLE IF NOT EXISTS check_answer (
    campaign_id {int} NOT NULL REFERENCES campaign(id),
    benchmark TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    status TEXT NOT NULL,
    answer TEXT,
    detail TEXT NOT NULL,
    batch {int},                  -- calls per iteration the probe calibrated; timed runs reuse it
    iterations {int},             -- (schema 7) iterations a timed run of this cell makes, when sized to a time
    stepped {int}{order},         -- (schema 9) the probe speaks the stepped mode (lock-step blocks); NULL: not asked
    PRIMARY KEY (campaign_id, benchmark, mechanism)
);
CREATE TABLE IF NOT EXISTS planned (
    campaign_id {int} NOT NULL REFERENCES campaign(id),
    seq {int} NOT NULL,
    benchmark TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    pexec {int} NOT NULL,
    PRIMARY KEY (campaign_id, seq)
);
CREATE TABLE IF NOT EXISTS execution (
    id {id},
    campaign_id {int} NOT NULL REFERENCES campaign(id),
    seq {int} NOT NULL,
    benchmark TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    pexec {int} NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL,
    exit_code {int},
    stderr_tail TEXT NOT NULL,
    answer TEXT,
    batch {int},
    info_json TEXT,
    peak_rss_kb {int},
    started {real} NOT NULL,
    wall_s {real} NOT NULL,
    cpu_s {real},                     -- the disturbance audit (schema 3): the benchmark's own CPU time,
    others_cpu_s {real},              -- CPU others used meanwhile, steal, the 1-min load average, the wait
    steal_s {real},                   -- for a quiet machine before it, and why it is disturbed (NULL: it
    load1 {real},                     -- is not, or was not audited)
    waited_s {real},
    disturbed TEXT,
    machine TEXT,                   -- (schema 5) the machine that ran it; NULL: the campaign's own
    UNIQUE (campaign_id, seq)
);
CREATE TABLE IF NOT EXISTS series (  -- (schema 4) one row per execution and quantity, not per iteration
    execution_id {int} NOT NULL REFERENCES execution(id),
    name TEXT NOT NULL,             -- SECONDS for the iteration times, else the name of a probe's counter
    data {blob} NOT NULL,             -- one little-endian float64 per iteration
    PRIMARY KEY (execution_id, name)
){without_rowid};
CREATE TABLE IF NOT EXISTS cell_decision ( -- adaptive budgets (schema 3): each round's verdict per cell
    campaign_id {int} NOT NULL REFERENCES campaign(id),
    round {int} NOT NULL,
    benchmark TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    executions {int} NOT NULL,    -- process executions of the cell stored when it was judged
    classification TEXT,
    half_width {real},                -- the steady-state CI's half-width over its estimate
    state TEXT NOT NULL,            -- open (more rounds), settled, capped, failing, out of time
    reason TEXT NOT NULL,
    wait_projection_s {real},         -- (schema 11) nearest first: the seconds of blocks its benchmark was projected
                                    -- to need when that made it wait this round; NULL: it did not wait
    PRIMARY KEY (campaign_id, round, benchmark, mechanism)
);
CREATE TABLE IF NOT EXISTS machine (  -- (schema 5) every machine that stored an execution, as it described itself
    id TEXT PRIMARY KEY,
    environment_json TEXT NOT NULL,
    seen {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS execution_class (  -- (schema 6) each execution's classification, made once
    execution_id {int} NOT NULL REFERENCES execution(id),
    rules TEXT NOT NULL,            -- the rules' version it was made under (stats.classify.RULES_VERSION)
    record_json TEXT NOT NULL,      -- stats.classify.to_record
    PRIMARY KEY (execution_id)
);
CREATE TABLE IF NOT EXISTS calibration (  -- (schema 8) `bridgebench calibrate`: a machine's own drift and δ
    machine TEXT NOT NULL,
    created {real} NOT NULL,
    record_json TEXT NOT NULL,      -- calibrate.Calibration
    PRIMARY KEY (machine, created)
);
CREATE TABLE IF NOT EXISTS speed_reading (  -- (schema 10) the reference loop's speed as a campaign ran (reference.py)
    campaign_id {int} NOT NULL REFERENCES campaign(id),
    taken {real} NOT NULL,
    machine TEXT NOT NULL,
    record_json TEXT NOT NULL,      -- reference.Reading
    PRIMARY KEY (campaign_id, taken)
);
CREATE TABLE IF NOT EXISTS analysis (
    campaign_id {int} NOT NULL REFERENCES campaign(id),
    computed {real} NOT NULL,
    result_json TEXT NOT NULL,
    PRIMARY KEY (campaign_id)
);
"""


class StoreError(Exception):
    """A store that cannot be opened or written; the message is one line, ready to print."""


class StoreMissing(StoreError):
    """A read-only command named a store that does not exist (yet)."""


class AlreadyStored(StoreError):
    """Another harness stored this planned execution first (a fleet job retried after its worker vanished)."""


class StoreWriteError(StoreError):
    """A write failed mid-run (disk full, locked by another writer, read-only): what was committed before
    is kept, and `run --resume` continues once the cause is gone."""


class CampaignBusy(StoreError):
    """Another running harness owns the campaign."""


@dataclass(frozen=True)
class Campaign:
    id: int
    study: str
    study_path: str
    config_hash: str
    config: dict[str, Any]
    git_sha: str
    environment: dict[str, Any]
    machine: str
    created: float
    finished: float | None
    state: str


@dataclass(frozen=True)
class StoredExecution:
    id: int
    seq: int
    benchmark: str
    mechanism: str
    pexec: int
    status: str
    detail: str
    exit_code: int | None
    stderr_tail: str
    answer: str | None
    batch: int | None
    peak_rss_kb: int | None
    wall_s: float
    info_json: str | None = None  # what else the probe reported (vm, clock, setup_s…)
    cpu_s: float | None = None
    others_cpu_s: float | None = None
    steal_s: float | None = None
    load1: float | None = None
    waited_s: float | None = None
    disturbed: str | None = None  # why the audit found the machine busy, or None
    machine: str | None = None  # the machine that ran it, where it is not the campaign's


def _backend(location: Path | str) -> store_sqlite.Backend | store_postgres.Backend:
    """PostgreSQL for a postgresql:// (or postgres://) connection string, else an SQLite file."""
    text = str(location)
    return store_postgres.Backend(text) if store_postgres.is_location(text) else store_sqlite.Backend(text)


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


class _Connection:
    """The backend's connection, speaking the SQL written here (`?` placeholders) in the backend's dialect."""

    def __init__(self, raw: Any, backend: store_sqlite.Backend | store_postgres.Backend) -> None:
        self.raw, self.backend = raw, backend

    def execute(self, query: str, params: tuple | list = ()) -> Any:
        return self.raw.execute(self.backend.sql(query), params)

    def executemany(self, query: str, rows: list[tuple]) -> None:
        if rows:
            self.raw.cursor().executemany(self.backend.sql(query), rows)

    def copy(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """Many rows at once: PostgreSQL's COPY where the backend has it, else one statement per row."""
        if hasattr(self.backend, "copy"):
            self.backend.copy(self.raw, table, columns, rows)
        else:
            self.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                             rows)


# How schemas up to 10 recorded that nearest first made a benchmark wait: only in its cells' reasons, as
# campaign/nearest.py worded them then ("…; waits this round: as they stand, its ratios would take about 90 s
# more, …" or "… more blocks than any campaign runs, …"). Read once, when such a store is opened by schema 11.
_OLD_WAITS = "; waits this round: "
_OLD_PROJECTION = re.compile(r"; waits this round: as they stand, its ratios would take about (\d+) s more")


def _waits_from_reasons(db: _Connection) -> None:
    """Schema 11: the wait_projection_s of the decisions a schema up to 10 stored, from their reasons."""
    rows = db.execute("SELECT campaign_id, round, benchmark, mechanism, reason FROM cell_decision WHERE reason LIKE ?",
                      (f"%{_OLD_WAITS}%",)).fetchall()
    for *key, reason in rows:
        found = _OLD_PROJECTION.search(reason)
        db.execute("UPDATE cell_decision SET wait_projection_s=? WHERE campaign_id=? AND round=? AND benchmark=?"
                   " AND mechanism=?", (float(found.group(1)) if found else math.inf, *key))


class Store:
    def __init__(self, location: Path | str, create: bool = True) -> None:
        """Open the store at `location` (a file, or a postgresql:// connection string); with create=False
        (read-only commands) a missing store is an error, never a new empty one."""
        self.backend = _backend(location)
        self.path = self.backend.name  # what messages show: never a password
        self.location = self.backend.location  # what another process opens the same store with
        b = self.backend
        try:
            missing = None if create else b.missing()
            if missing:
                raise StoreMissing(f"{self.path}: {missing}")
            self.db = _Connection(b.connect(), b)
            b.create_tables(self.db.raw, _SCHEMA.format(**b.SCALARS))
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = int(row[0]) if row else SCHEMA_VERSION
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: store schema {version}, this bridgebench reads up to "
                                 f"{SCHEMA_VERSION}")
            if row is not None and version == SCHEMA_VERSION:
                return
            with self.transaction() as db:
                if row is None:
                    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                b.migrate(db.raw, version)
                if version < 11:
                    _waits_from_reasons(db)
                db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
        except store_postgres.Unusable as err:
            raise StoreError(f"{self.path}: {err}") from err
        except OSError as err:
            raise StoreError(f"{self.path}: cannot create its folder: {err.strerror}") from err
        except b.DATABASE_ERRORS as err:
            raise StoreError(f"{self.path}: not a usable bridgebench store: {err}") from err

    def close(self) -> None:
        self.db.raw.close()

    def broken(self) -> bool:
        """True when the connection is lost (a PostgreSQL server restarted): open the store again."""
        return bool(getattr(self.db.raw, "broken", False) or getattr(self.db.raw, "closed", False))

    @contextmanager
    def transaction(self) -> Iterator[_Connection]:
        """All or nothing. The backend's write errors (disk full, locked for longer than the busy timeout,
        read-only, the server gone) become one StoreWriteError naming the store."""
        try:
            self.db.execute(self.backend.BEGIN)
            try:
                yield self.db
                self.db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(*self.backend.DATABASE_ERRORS):
                    self.db.execute("ROLLBACK")
                raise
        except self.backend.WRITE_ERRORS as err:
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise StoreWriteError(f"{self.path}: cannot write: {first}") from err

    def claim(self, campaign_id: int) -> locks.Lock:
        """Own a campaign while running it: a second harness (a `--resume` of a campaign still running)
        is refused instead of timing the same executions beside the first. The lock dies with its holder;
        release it with .release() or a with-block."""
        try:
            return self.backend.lock(f"campaign-{campaign_id}", blocking=False)
        except (locks.Busy, store_postgres.Busy) as busy:
            raise CampaignBusy(f"campaign {campaign_id} is being run by another bridgebench ({busy}); wait for "
                               "it to finish or stop it, then `--resume`") from None
        except OSError as err:
            raise StoreError(f"{self.path}: cannot lock campaign {campaign_id}: {err.strerror}") from err
        except store_postgres.Unusable as err:
            raise StoreError(f"{self.path}: cannot lock campaign {campaign_id}: {err}") from err

    def planning(self) -> locks.Lock:
        """Held briefly while a campaign is created or chosen for resuming, so that choosing and claiming
        are one step for every harness sharing this store."""
        return self.backend.lock("planning", blocking=True)

    # --- campaigns -----------------------------------------------------------------------------------
    def create_campaign(self, study: str, study_path: str, config_hash: str, config: dict[str, Any],
                        git_sha: str, environment: dict[str, Any], machine: str, tasks: list[Task]) -> int:
        with self.transaction() as db:
            campaign_id = int(db.execute(
                "INSERT INTO campaign (study, study_path, config_hash, config_json, git_sha, environment_json,"
                " machine, created, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running') RETURNING id",
                (study, study_path, config_hash, json.dumps(config, sort_keys=True), git_sha,
                 json.dumps(environment, sort_keys=True), machine, time.time()),
            ).fetchone()[0])
            db.executemany(
                "INSERT INTO planned VALUES (?, ?, ?, ?, ?)",
                [(campaign_id, t.seq, t.benchmark, t.mechanism, t.pexec) for t in tasks],
            )
        return campaign_id

    def _campaign(self, row: tuple) -> Campaign:
        return Campaign(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], json.loads(row[6]), row[7],
                        row[8], row[9], row[10])

    _CAMPAIGN_COLUMNS = ("id, study, study_path, config_hash, config_json, git_sha, environment_json, machine,"
                         " created, finished, state")

    def campaign(self, campaign_id: int) -> Campaign:
        row = self.db.execute(f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaign WHERE id=?",
                              (campaign_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no campaign {campaign_id}")
        return self._campaign(row)

    def campaigns(self, study: str | None = None) -> list[Campaign]:
        query = f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaign"
        rows = (self.db.execute(query + " WHERE study=? ORDER BY id", (study,)) if study
                else self.db.execute(query + " ORDER BY id"))
        return [self._campaign(r) for r in rows]

    def latest_campaign(self, study: str | None = None, unfinished: bool = False) -> Campaign | None:
        found = [c for c in self.campaigns(study) if not unfinished or c.state != "done"]
        return found[-1] if found else None

    def set_options(self, campaign_id: int, options: dict[str, Any]) -> None:
        """Replace the options in the campaign's stored config (a resume that raises its time cap)."""
        config = {**self.campaign(campaign_id).config, "options": options}
        with self.transaction() as db:
            db.execute("UPDATE campaign SET config_json=? WHERE id=?",
                       (json.dumps(config, sort_keys=True), campaign_id))

    def set_state(self, campaign_id: int, state: str) -> None:
        finished = time.time() if state == "done" else None
        with self.transaction() as db:
            db.execute("UPDATE campaign SET state=?, finished=? WHERE id=?", (state, finished, campaign_id))

    # --- builds and the answer check -------------------------------------------------------------------
    def record_builds(self, campaign_id: int, builds: dict[str, BuildResult], labels: dict[str, str]) -> None:
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO mechanism_build (campaign_id, mechanism, label, available, reason, version, build_hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (campaign_id, mechanism) DO UPDATE SET"
                " label=excluded.label, available=excluded.available, reason=excluded.reason,"
                " version=excluded.version, build_hash=excluded.build_hash",
                [(campaign_id, b.mechanism, labels[b.mechanism], int(b.available), b.reason, b.version,
                  b.build_hash) for b in builds.values()],
            )

    def builds(self, campaign_id: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT mechanism, label, available, reason, version, build_hash FROM mechanism_build"
            f" WHERE campaign_id=? ORDER BY {self.backend.ORDER}", (campaign_id,))
        keys = ("mechanism", "label", "available", "reason", "version", "build_hash")
        return [dict(zip(keys, r, strict=True)) | {"available": bool(r[2])} for r in rows]

    def record_check(self, campaign_id: int,
                     rows: list[tuple[str, str, str, str | None, str, int | None, int | None, bool | None]]) -> None:
        """(benchmark, mechanism, status, answer, detail, batch, iterations, stepped) per row."""
        with self.transaction() as db:
            db.executemany("INSERT INTO check_answer (campaign_id, benchmark, mechanism, status, answer, detail, batch,"
                           " iterations, stepped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                           " ON CONFLICT (campaign_id, benchmark, mechanism) DO UPDATE SET status=excluded.status,"
                           " answer=excluded.answer,"
                           " detail=excluded.detail, batch=excluded.batch, iterations=excluded.iterations,"
                           " stepped=excluded.stepped",
                           [(campaign_id, *r[:7], _flag(r[7])) for r in rows])

    def check_answers(self, campaign_id: int) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT benchmark, mechanism, status, answer, detail, batch, iterations, stepped FROM"
                               f" check_answer WHERE campaign_id=? ORDER BY {self.backend.ORDER}", (campaign_id,))
        keys = ("benchmark", "mechanism", "status", "answer", "detail", "batch", "iterations", "stepped")
        return [dict(zip(keys, r, strict=True)) | {"stepped": None if r[7] is None else bool(r[7])} for r in rows]

    # --- executions ----------------------------------------------------------------------------------
    def planned(self, campaign_id: int) -> list[Task]:
        rows = self.db.execute("SELECT seq, benchmark, mechanism, pexec FROM planned WHERE campaign_id=?"
                               " ORDER BY seq", (campaign_id,))
        return [Task(*r) for r in rows]

    def planned_task(self, campaign_id: int, seq: int) -> Task | None:
        """One planned execution (a fleet job's), without reading the whole plan."""
        row = self.db.execute("SELECT seq, benchmark, mechanism, pexec FROM planned WHERE campaign_id=? AND seq=?",
                              (campaign_id, seq)).fetchone()
        return Task(*row) if row else None

    def is_stored(self, campaign_id: int, seq: int) -> bool:
        return self.db.execute("SELECT 1 FROM execution WHERE campaign_id=? AND seq=?",
                               (campaign_id, seq)).fetchone() is not None

    def pending_count(self, campaign_id: int) -> int:
        """How many planned executions have not run yet."""
        row = self.db.execute("SELECT count(*) FROM planned p WHERE campaign_id=? AND NOT EXISTS (SELECT 1 FROM"
                              " execution e WHERE e.campaign_id=p.campaign_id AND e.seq=p.seq)",
                              (campaign_id,)).fetchone()
        return int(row[0])

    def add_planned(self, campaign_id: int, tasks: list[Task]) -> None:
        """More of the plan (an adaptive budget's next round)."""
        with self.transaction() as db:
            db.executemany("INSERT INTO planned VALUES (?, ?, ?, ?, ?)",
                           [(campaign_id, t.seq, t.benchmark, t.mechanism, t.pexec) for t in tasks])

    def drop_unrun(self, campaign_id: int) -> int:
        """Remove the planned executions that have not run (a time cap ended the campaign); returns how many."""
        with self.transaction() as db:
            cur = db.execute("DELETE FROM planned WHERE campaign_id=? AND seq NOT IN"
                             " (SELECT seq FROM execution WHERE campaign_id=?)", (campaign_id, campaign_id))
        return cur.rowcount

    def record_decisions(self, campaign_id: int, round_: int,
                         decisions: list[tuple[str, str, int, str | None, float | None, str, str, float | None]]
                         ) -> None:
        """One round's verdict per cell: (benchmark, mechanism, executions, class, half-width, state, why, and the
        projection that made its benchmark wait this round, or None)."""
        with self.transaction() as db:
            db.executemany("INSERT INTO cell_decision VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (campaign_id,"
                           " round, benchmark, mechanism) DO UPDATE SET executions=excluded.executions,"
                           " classification=excluded.classification, half_width=excluded.half_width,"
                           " state=excluded.state, reason=excluded.reason,"
                           " wait_projection_s=excluded.wait_projection_s",
                           [(campaign_id, round_, *d) for d in decisions])

    def decisions(self, campaign_id: int) -> list[dict[str, Any]]:
        keys = ("round", "benchmark", "mechanism", "executions", "classification", "half_width", "state", "reason",
                "wait_projection_s")
        rows = self.db.execute(f"SELECT {', '.join(keys)} FROM cell_decision WHERE campaign_id=?"
                               " ORDER BY round, benchmark, mechanism", (campaign_id,))
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def pending(self, campaign_id: int) -> list[Task]:
        """The planned executions that have not run yet, in plan order."""
        done = self.done_seqs(campaign_id)
        return [t for t in self.planned(campaign_id) if t.seq not in done]

    def done_seqs(self, campaign_id: int) -> set[int]:
        return {r[0] for r in self.db.execute("SELECT seq FROM execution WHERE campaign_id=?", (campaign_id,))}

    def record_machine(self, machine: str, environment: dict[str, Any]) -> None:
        """A machine's description (a fleet worker records its own before it runs anything)."""
        with self.transaction() as db:
            db.execute("INSERT INTO machine VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                       " environment_json=excluded.environment_json, seen=excluded.seen",
                       (machine, json.dumps(environment, sort_keys=True), time.time()))

    def machines(self) -> dict[str, dict[str, Any]]:
        return {r[0]: json.loads(r[1]) for r in self.db.execute("SELECT id, environment_json FROM machine")}

    def record_calibration(self, machine: str, created: float, record: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO calibration VALUES (?, ?, ?)",
                       (machine, created, json.dumps(record, sort_keys=True)))

    def calibration(self, machine: str, before: float | None = None) -> dict[str, Any] | None:
        """The machine's latest calibration (made before `before`, when given), or None."""
        when, params = ("", (machine,)) if before is None else (" AND created <= ?", (machine, before))
        row = self.db.execute(f"SELECT record_json FROM calibration WHERE machine=?{when} ORDER BY created DESC"
                              " LIMIT 1", params).fetchone()
        return json.loads(row[0]) if row else None

    def record_speed(self, campaign_id: int, machine: str, taken: float, record: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO speed_reading VALUES (?, ?, ?, ?)",
                       (campaign_id, taken, machine, json.dumps(record, sort_keys=True)))

    def speed_readings(self, campaign_id: int) -> list[dict[str, Any]]:
        """The campaign's readings of the reference loop, oldest first, each with the machine that took it."""
        return [{**json.loads(r[0]), "machine": r[1]} for r in self.db.execute(
            "SELECT record_json, machine FROM speed_reading WHERE campaign_id=? ORDER BY taken", (campaign_id,))]

    def record_execution(self, campaign_id: int, task: Task, run: Execution, machine: str | None = None) -> int:
        """Everything about one process execution in one transaction: all of it is stored, or none.
        `machine`: the machine that ran it, when it is not the campaign's own (a fleet worker's)."""
        try:
            return self._insert_execution(campaign_id, task, run, machine)
        except StoreWriteError:
            raise
        except self.backend.UNIQUE_ERRORS as err:
            if "unique" not in str(err).lower():  # another constraint: not a second copy
                raise
            raise AlreadyStored(f"campaign {campaign_id}: execution {task.seq} is already stored") from err
        except self.backend.BIND_ERRORS as err:  # a value the database cannot bind; rolled back, nothing stored
            raise ValueError(str(err)) from err

    def _insert_execution(self, campaign_id: int, task: Task, run: Execution, machine: str | None) -> int:
        out = run.output
        with self.transaction() as db:
            execution_id = int(db.execute(
                "INSERT INTO execution (campaign_id, seq, benchmark, mechanism, pexec, status, detail, exit_code,"
                " stderr_tail, answer, batch, info_json, peak_rss_kb, started, wall_s, cpu_s, others_cpu_s,"
                " steal_s, load1, waited_s, disturbed, machine)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (campaign_id, task.seq, task.benchmark, task.mechanism, task.pexec, run.status, run.detail,
                 run.exit_code, run.stderr_tail, out.answer if out else None, out.batch if out else None,
                 json.dumps(out.info) if out else None, run.peak_rss_kb, run.started, run.wall_s,
                 *((a.cpu_s, a.others_cpu_s, a.steal_s, a.load1, a.waited_s, a.disturbed) if (a := run.machine)
                   else (None,) * 6), machine),
            ).fetchone()[0])
            if out:
                if SECONDS in out.counters:
                    raise ValueError(f"a counter may not be named {SECONDS!r}")
                db.copy("series", ("execution_id", "name", "data"),
                        [(execution_id, SECONDS, to_blob(out.times)),
                         *((execution_id, name, to_blob(vs)) for name, vs in out.counters.items())])
        return execution_id

    def executions(self, campaign_id: int, after_id: int = 0) -> list[StoredExecution]:
        """The campaign's stored executions in plan order; with after_id, only those stored after it."""
        rows = self.db.execute(
            "SELECT id, seq, benchmark, mechanism, pexec, status, detail, exit_code, stderr_tail, answer, batch,"
            " peak_rss_kb, wall_s, info_json, cpu_s, others_cpu_s, steal_s, load1, waited_s, disturbed, machine"
            " FROM execution WHERE campaign_id=? AND id>? ORDER BY seq", (campaign_id, after_id))
        return [StoredExecution(*r) for r in rows]

    def times(self, execution_id: int) -> np.ndarray:
        """Seconds per iteration, as the probe reported them (per batch of calls)."""
        return self.counter(execution_id, SECONDS)

    def counter(self, execution_id: int, name: str) -> np.ndarray:
        """A counter's value per iteration (empty when the probe did not report it)."""
        row = self.db.execute("SELECT data FROM series WHERE execution_id=? AND name=?",
                              (execution_id, name)).fetchone()
        return from_blob(row[0]) if row else np.empty(0)

    def series(self, execution_ids: list[int], names: tuple[str, ...] = (SECONDS,)
               ) -> dict[tuple[int, str], np.ndarray]:
        """Many executions' series in one query: (execution id, name) -> values."""
        out: dict[tuple[int, str], np.ndarray] = {}
        for start in range(0, len(execution_ids), 500):  # SQLite's bound-parameter limit
            chunk = execution_ids[start:start + 500]
            rows = self.db.execute(
                f"SELECT execution_id, name, data FROM series WHERE execution_id IN ({','.join('?' * len(chunk))})"
                f" AND name IN ({','.join('?' * len(names))})", (*chunk, *names))
            for eid, name, data in rows:
                out[(eid, name)] = from_blob(data)
        return out

    def iteration_count(self, campaign_id: int) -> int:
        row = self.db.execute("SELECT coalesce(sum(length(data)), 0) FROM series JOIN execution"
                              " ON execution.id=execution_id WHERE campaign_id=? AND name=?",
                              (campaign_id, SECONDS)).fetchone()
        return int(row[0]) // FLOAT64.itemsize  # PostgreSQL's sum is a numeric: int() takes it

    # --- derived -------------------------------------------------------------------------------------
    def execution_classes(self, execution_ids: list[int], rules: str) -> dict[int, dict[str, Any]]:
        """The stored classifications of these executions made under `rules` (others are not returned)."""
        out = {}
        for start in range(0, len(execution_ids), 500):  # SQLite's bound-parameter limit
            chunk = execution_ids[start:start + 500]
            rows = self.db.execute(f"SELECT execution_id, record_json FROM execution_class WHERE rules=? AND"
                                   f" execution_id IN ({','.join('?' * len(chunk))})", (rules, *chunk))
            out.update({int(eid): json.loads(record) for eid, record in rows})
        return out

    def save_execution_classes(self, rules: str, records: dict[int, dict[str, Any]]) -> None:
        """Keep classifications for the next analysis (one made under older rules is replaced)."""
        if not records:
            return
        with self.transaction() as db:
            db.executemany("INSERT INTO execution_class VALUES (?, ?, ?) ON CONFLICT (execution_id) DO UPDATE SET"
                           " rules=excluded.rules, record_json=excluded.record_json",
                           [(eid, rules, json.dumps(r)) for eid, r in records.items()])

    def save_analysis(self, campaign_id: int, result: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO analysis VALUES (?, ?, ?) ON CONFLICT (campaign_id) DO UPDATE SET"
                       " computed=excluded.computed, result_json=excluded.result_json",
                       (campaign_id, time.time(), json.dumps(result)))

    def analysis(self, campaign_id: int) -> dict[str, Any] | None:
        row = self.db.execute("SELECT result_json FROM analysis WHERE campaign_id=?", (campaign_id,)).fetchone()
        return json.loads(row[0]) if row else None

    # --- one campaign copied into another store (a portable baseline: bridgebench/baseline.py) ---------------
    _CAMPAIGN_ROWS = (  # each table and which of its rows belong to the campaign (? is its id)
        ("campaign", "id = ?"), ("mechanism_build", "campaign_id = ?"), ("check_answer", "campaign_id = ?"),
        ("planned", "campaign_id = ?"), ("execution", "campaign_id = ?"),
        ("series", "execution_id IN (SELECT id FROM execution WHERE campaign_id = ?)"),
        ("cell_decision", "campaign_id = ?"),
        ("execution_class", "execution_id IN (SELECT id FROM execution WHERE campaign_id = ?)"),
        ("analysis", "campaign_id = ?"), ("speed_reading", "campaign_id = ?"),
        ("machine", "id IN (SELECT machine FROM campaign WHERE id = ?) "
                    "OR id IN (SELECT machine FROM execution WHERE campaign_id = ?)"),
    )

    def copy_campaign(self, campaign_id: int, dest: Store) -> None:
        """Every row of the campaign, its executions' series and classes, its analysis and its machines, into
        `dest` (an empty store), with the same ids: what the diff and the reports read of it is all there."""
        self.campaign(campaign_id)  # a missing campaign is its one-line error
        with dest.transaction() as out:
            for table, where in self._CAMPAIGN_ROWS:
                cursor = self.db.execute(f"SELECT * FROM {table} WHERE {where}", (campaign_id,) * where.count("?"))
                columns = [d[0] for d in cursor.description]
                rows = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor.fetchall()]
                out.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                                rows)

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM meta WHERE key=?", (key,))
            db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
