"""A campaign shared by workers on many machines, through procrastinate (a task queue kept in the same
PostgreSQL database as the store): `enqueue` puts one job per planned process execution on the queue,
`worker` runs them one at a time, `status` says where a campaign stands.

Faults, and why nothing is stored twice or lost:
- a worker that dies (SIGKILL, a lost machine) stops sending heartbeats; after LEASE_S another worker
  gives its job back to the queue (procrastinate's stalled-job query, then retry). The dead worker's
  execution was never committed (one transaction per execution), so it runs again from the start.
- a job whose execution is already stored (its worker died after the commit, before the queue heard of
  it) finds it stored and ends; the store's UNIQUE (campaign, seq) refuses a second copy in any case.
- a worker takes one job at a time, and holds a machine-wide lock while it times anything, so two workers
  on one machine never run two timed executions at once (their figures would measure each other).
- the server restarting while a worker asks the queue for its next job ends procrastinate's worker loop
  with a database error: the worker starts the loop again once the server answers, for up to
  RECONNECT_S of failures in a row, then stops with one line.
- the server restarting just as a job ends leaves the job 'doing' under a worker that is alive (its end could
  not be saved, and its heartbeat goes on): the worker finds such jobs of its own that it is not running and
  gives them back (lost_jobs), so they run again and `worker --until-done` ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import faulthandler
import logging
import os
import signal
import statistics
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridgebench import environment, instructions, native, reference
from bridgebench.build import BuildResult, build_study, default_root
from bridgebench.campaign import engine
from bridgebench.campaign.kind import CampaignError, CheckRow
from bridgebench.campaign.kinds import TIMING
from bridgebench.instructions import INSTRUCTIONS
from bridgebench.locks import FileLock
from bridgebench.options import TimingOptions, read
from bridgebench.store import Store, StoreError
from bridgebench.store import postgres as store_postgres
from bridgebench.study import Study, StudyError, find_study, read_study
from bridgebench.timing.lockstep import lock_cpu

QUEUE = "bridgebench"
TASK_NAME = "bridgebench.execute"
RETRIES, RETRY_WAIT_S = 20, 3  # a job that lost the database: again, every 3 s, for about a minute
RECONNECT_S, RECONNECT_WAIT_S = 60.0, 1.0  # a worker loop that lost the database: again, for a minute
STACKS_END = "--- end of the worker's stacks"  # SIGUSR1's dump is whole once this line is out


class FleetError(Exception):
    """One line, ready to print."""


def lease_s() -> float:
    """How long a worker may go without a heartbeat before its job is given to another
    (BRIDGEBENCH_FLEET_LEASE_S, default 60)."""
    try:
        return max(1.0, float(os.environ.get("BRIDGEBENCH_FLEET_LEASE_S", "60")))
    except ValueError:
        return 60.0


def _procrastinate() -> Any:
    try:
        import procrastinate
    except ImportError as err:
        raise FleetError("the fleet needs procrastinate: run `bash scripts/install.sh --fleet`") from err
    return procrastinate


def _shared(store: Store) -> bool:
    """Whether the store is a PostgreSQL server: only there can a campaign be queued."""
    return store.location.startswith(("postgresql://", "postgres://"))


def require_postgres(store: Store) -> None:
    if not _shared(store):
        raise FleetError(f"{store.path}: a shared campaign needs a PostgreSQL store (--store postgresql://…)")


def app_for(store: Store) -> Any:
    """The procrastinate app of this store's database, with the one task a fleet runs."""
    procrastinate = _procrastinate()
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=store.location))
    # The server gone for a moment (restarted, a network blip): the job runs again, the execution with it.
    again = procrastinate.RetryStrategy(max_attempts=RETRIES, wait=RETRY_WAIT_S,
                                        retry_exceptions={StoreError, *store_postgres.database_errors()})

    @app.task(name=TASK_NAME, queue=QUEUE, pass_context=True, retry=again)
    def execute(context: Any, campaign_id: int, seq: int) -> str:
        held = _state.hold(context.job.id, context.job.worker_id) if _state else contextlib.nullcontext()
        with held:
            try:
                return _execute(campaign_id, seq)
            except Exception as err:  # the worker says why in one line and goes on
                again = isinstance(err, (StoreError, *store_postgres.database_errors()))
                print(f"job {'interrupted' if again else 'failed'}: campaign {campaign_id}, execution {seq}: {err}"
                      + ("; it will run again" if again else ""), file=sys.stderr, flush=True)
                raise

    return app


def _queue_tables_exist(store: Store) -> bool:
    """An SQLite store has no queue (its campaigns run in one process): `status` still shows them."""
    return _shared(store) and bool(store.db.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()[0])


# --- enqueue ---------------------------------------------------------------------------------------------
def enqueue(store: Store, study: Study, options: TimingOptions, builds: dict[str, BuildResult],
            checked: list[CheckRow]) -> int:
    """Plan the campaign and put each planned execution on the queue; refuses a campaign of the same study
    and options that is already queued and not finished."""
    require_postgres(store)
    if options.adaptive:
        raise FleetError(f"{study.name}: this budget is adaptive; a shared campaign needs a fixed one "
                         "(--budget fixed, or a budget without until_ci)")
    if options.replace_dropped:  # replacements are planned by the harness that ran the plan, after it
        raise FleetError(f"{study.name}: budget '{options.budget}' replaces dropped blocks, which a shared "
                         "campaign's workers cannot plan; use a budget without replace_dropped")
    app = app_for(store)
    with app.open():
        if not _queue_tables_exist(store):
            app.schema_manager.apply_schema()
        with store.planning():
            refuse_a_second(store, study, options)
            cid = engine.create(store, TIMING, study, options, builds, checked)
            jobs = [{"campaign_id": cid, "seq": t.seq} for t in store.planned(cid)]
            app.configure_task(TASK_NAME, queue=QUEUE).batch_defer(*jobs)
    return cid


def refuse_a_second(store: Store, study: Study, options: TimingOptions) -> None:
    """FleetError when a campaign of this study file and these options is queued and not finished."""
    for c in store.campaigns(study.name):
        if (c.state != "done" and c.config_hash == study.config_hash() and read(c).options == options
                and _jobs(store, c.id)):
            raise FleetError(f"campaign {c.id} of {study.name} with these options is already enqueued "
                             f"({len(store.done_seqs(c.id))} of {len(store.planned(c.id))} executions stored); "
                             f"`bridgebench status {c.id}` shows it, `bridgebench worker` runs it")


def _jobs(store: Store, campaign_id: int, statuses: tuple[str, ...] = ("todo", "doing")) -> int:
    if not _queue_tables_exist(store):
        return 0
    row = store.db.execute("SELECT count(*) FROM procrastinate_jobs WHERE queue_name = ? AND"
                           " (args->>'campaign_id')::bigint = ? AND status::text = ANY(?)",
                           (QUEUE, campaign_id, list(statuses))).fetchone()
    return int(row[0])


# --- the worker ------------------------------------------------------------------------------------------
@dataclass
class _Worker:
    """What the worker process keeps between jobs: its store connections (one per thread), its machine's
    identity, the builds it has made, and the campaigns whose speed it has read."""

    location: str
    build_dir: Path | None  # None: each study's default (build.default_root)
    machine: str = ""
    builds: dict[tuple[str, tuple[str, ...]], dict[str, BuildResult]] = field(default_factory=dict)
    local: threading.local = field(default_factory=threading.local)
    read: set[int] = field(default_factory=set)  # the campaigns whose speed it has read on this machine
    # The ids procrastinate gave this process's worker loops (a loop started again gets a new one), and the jobs
    # it is running: a job of ours in 'doing' that we do not run was lost (lost_jobs).
    worker_ids: set[int] = field(default_factory=set)
    holding: set[int] = field(default_factory=set)

    @contextlib.contextmanager
    def hold(self, job_id: int, worker_id: int | None) -> Iterator[None]:
        if worker_id is not None:
            self.worker_ids.add(worker_id)
        self.holding.add(job_id)
        try:
            yield
        finally:
            self.holding.discard(job_id)

    def store(self) -> Store:
        store = getattr(self.local, "store", None)
        if store is None or store.broken():  # a restarted server: connect again
            self.local.store = store = Store(self.location, create=False)
        return store


_state: _Worker | None = None


def _machine_lock() -> FileLock:
    """Held while a worker times an execution: one timed run at a time on this machine, however many
    workers it runs."""
    return FileLock(native.cache_dir() / "worker-machine.lock").acquire(blocking=True)


def _execute(campaign_id: int, seq: int) -> str:
    state = _state
    if state is None:
        raise FleetError("no worker state: jobs run only inside `bridgebench worker`")
    store = state.store()
    if store.is_stored(campaign_id, seq):
        return "already stored"
    c = store.campaign(campaign_id)
    try:  # the study of this checkout by its name, else the file the campaign was planned from, if here
        study = read_study(find_study(c.study) if not Path(c.study_path).is_file() else Path(c.study_path))
    except StudyError as err:
        raise FleetError(f"this worker cannot load study {c.study}: {err}") from err
    try:
        engine.require_unchanged(study, c, "update this worker's checkout")
    except CampaignError as err:
        raise FleetError(str(err)) from err
    options = read(c).options
    if options.metric == INSTRUCTIONS:  # counts add up across machines only under the campaign's pinning
        unlike = instructions.unlike_here(options.counting or {})
        if unlike:
            raise FleetError(f"this worker cannot count campaign {campaign_id}'s instructions: {unlike}")
    key = (study.name, options.mechanisms)
    if key not in state.builds:
        state.builds[key] = build_study(study, state.build_dir or default_root(study), list(options.mechanisms))
    builds = state.builds[key]
    engine.verify_builds(store, campaign_id, builds)
    task = store.planned_task(campaign_id, seq)
    if task is None:
        raise FleetError(f"campaign {campaign_id} has no planned execution {seq}")
    with _machine_lock(), TIMING.executor(store, study, campaign_id, options, builds) as execute:
        if campaign_id not in state.read:  # this machine's speed, once a campaign, beside the others' (reference.py)
            engine.record_speed(store, campaign_id, state.machine, reference.read("worker's start", lock_cpu()))
            state.read.add(campaign_id)
        engine.run_tasks(store, campaign_id, [task], execute, machine=state.machine)
    engine.done_if_complete(store, campaign_id)
    return "stored"


async def _give_back_stalled(app: Any, lease: float) -> None:
    """Every heartbeat, return to the queue the jobs of workers that stopped sending heartbeats, and this
    process's own lost jobs (lost_jobs)."""
    suspects: set[int] = set()
    while True:
        with contextlib.suppress(Exception):  # the server away, or another worker gave the job back first
            for job in await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=lease):
                await app.job_manager.retry_job(job)
        with contextlib.suppress(Exception):
            lost = await lost_jobs(app)
            for job_id in lost & suspects:  # lost at two looks in a row: not a job between fetch and start
                await app.job_manager.retry_job_by_id_async(job_id, retry_at=datetime.datetime.now(datetime.UTC))
            suspects = lost
        await asyncio.sleep(lease / 4)


async def lost_jobs(app: Any) -> set[int]:
    """This process's jobs that the queue says it is running and it is not. A job whose end could not be saved
    (the server restarting as it ended) stays 'doing' under a worker whose heartbeat goes on, which the
    stalled-job query never gives back: `worker --until-done` would wait for it for ever."""
    state = _state
    if state is None or not state.worker_ids:
        return set()
    rows = await app.connector.execute_query_all_async(
        "SELECT id FROM procrastinate_jobs WHERE queue_name = %(queue)s AND status = 'doing' "
        "AND worker_id = ANY(%(workers)s)", queue=QUEUE, workers=sorted(state.worker_ids))
    return {int(r["id"]) for r in rows} - state.holding


async def _until_drained(store_location: str, campaign_id: int | None) -> None:
    """Return when nothing is left to run: no job waiting or running (stalled ones count as running until
    they are given back and run)."""
    store = None
    while True:
        try:
            if store is None or store.broken():
                store = Store(store_location, create=False)
            row = store.db.execute("SELECT count(*) FROM procrastinate_jobs WHERE queue_name = ? AND status::text"
                                   " IN ('todo', 'doing') AND (?::bigint IS NULL OR (args->>'campaign_id')::bigint"
                                   " = ?::bigint)", (QUEUE, campaign_id, campaign_id)).fetchone()
            if int(row[0]) == 0:
                store.close()
                return
        except (StoreError, *store_postgres.database_errors()):  # the server is away: ask again soon
            store = None
        await asyncio.sleep(0.5)


async def _work(app: Any, options: dict[str, Any]) -> None:
    """procrastinate's worker loop, started again when the database went away under it (a server restart),
    until it ends as asked (SIGINT/SIGTERM) or the database has failed it for RECONNECT_S in a row."""
    connector_error = _procrastinate().exceptions.ConnectorException
    loop = asyncio.get_running_loop()
    failing_since = None
    while True:
        started = loop.time()
        try:
            await app.run_worker_async(**options)
            return
        except connector_error as err:
            now = loop.time()
            if failing_since is None or now - started > RECONNECT_S:
                failing_since = started  # a loop that ran a while before failing starts a new count
            if now - failing_since > RECONNECT_S:
                raise FleetError(f"the database failed the worker for over {RECONNECT_S:g} s: "
                                 f"{err.__cause__ or err}") from err
            await asyncio.sleep(RECONNECT_WAIT_S)


def _dump_stacks(signum: int, frame: object) -> None:
    """SIGUSR1: every thread's stack to stderr, then STACKS_END, so a worker that seems stuck says where
    (tests/test_fleet.py). A Python-level handler runs in the main thread, which alone can end the worker, so
    a SIGTERM sent after it cannot cut the dump short; faulthandler's own handler ran in any thread and a CI
    run (2026-11-29) lost the dump's end to the worker's exit. The cost: a main thread stuck in C code never
    dumps, where the worker's loop waits in epoll, which a signal interrupts."""
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    print(STACKS_END, file=sys.stderr, flush=True)


def run_worker(store: Store, build_dir: Path | None, *, concurrency: int = 1, until_done: bool = False,
               campaign_id: int | None = None) -> None:
    """Take jobs from the queue and run them until stopped (SIGINT/SIGTERM: after the job in hand), or with
    until_done, until nothing is left to run."""
    global _state
    require_postgres(store)
    signal.signal(signal.SIGUSR1, _dump_stacks)
    logging.getLogger("procrastinate").setLevel(logging.CRITICAL)  # a failed job is said in one line
    env = environment.capture()
    machine = environment.machine_id(env)
    store.record_machine(machine, env)
    _state = _Worker(store.location, build_dir, machine)
    app = app_for(store)
    lease = lease_s()

    async def main() -> None:
        async with app.open_async():
            if not _queue_tables_exist(store):
                raise FleetError(f"{store.path}: nothing was ever enqueued here (`bridgebench enqueue STUDY`)")
            reaper = asyncio.create_task(_give_back_stalled(app, lease))
            worker = asyncio.create_task(_work(app, dict(
                queues=[QUEUE], concurrency=concurrency, name=f"{env.get('hostname')}-{os.getpid()}",
                update_heartbeat_interval=lease / 4, stalled_worker_timeout=lease, fetch_job_polling_interval=1.0,
                delete_jobs="never")))
            waits = [worker]
            if until_done:
                waits.append(asyncio.create_task(_until_drained(store.location, campaign_id)))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in (reaper, *waits):
                    t.cancel()
                await asyncio.gather(reaper, *waits, return_exceptions=True)
            if worker.done() and not worker.cancelled() and worker.exception():
                raise worker.exception()  # type: ignore[misc]

    asyncio.run(main())


# --- status ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MachineRow:
    machine: str
    cpu: str
    done: int
    failed: int


@dataclass(frozen=True)
class Status:
    campaign: int
    study: str
    state: str
    planned: int
    stored: int
    queued: int
    running: int
    failed_jobs: int
    machines: list[MachineRow]
    eta_s: float | None


def status(store: Store, campaign_id: int) -> Status:
    c = store.campaign(campaign_id)
    executions = store.executions(campaign_id)
    described = store.machines()
    rows: dict[str, list[int]] = {}
    for e in executions:
        counts = rows.setdefault(e.machine or c.machine, [0, 0])
        counts[0 if e.status == "ok" else 1] += 1
    machines = [MachineRow(m, str((described.get(m) or (c.environment if m == c.machine else {})).get("cpu_model")
                                  or "?"), ok, bad) for m, (ok, bad) in sorted(rows.items())]
    planned = len(store.planned(campaign_id))
    running = _jobs(store, campaign_id, ("doing",))
    remaining = planned - len(executions)
    walls = [e.wall_s for e in executions]
    eta = remaining * statistics.median(walls) / max(1, running) if walls and remaining else (0.0 if not remaining
                                                                                                else None)
    return Status(campaign_id, c.study, c.state, planned, len(executions), _jobs(store, campaign_id, ("todo",)),
                  running, _jobs(store, campaign_id, ("failed",)), machines, eta)


def latest_campaign(store: Store) -> int:
    c = store.latest_campaign()
    if c is None:
        raise StoreError(f"{store.path}: no campaign")
    return c.id
