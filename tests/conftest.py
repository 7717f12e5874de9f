"""Fixtures and helpers shared by the test modules."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bridgebench.build import BuildResult
from bridgebench.protocol import ProbeOutput
from bridgebench.runner import CRASHED, OK, Execution, plan
from bridgebench.store import Store
from bridgebench.timing.analysis import Series, analyse
from bridgebench.timing.lockstep import BLOCK_CPU
from bridgebench.timing.result import Analysis

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parents[1]
BRIDGEBENCH = [sys.executable, "-m", "bridgebench.cli"]


def bridgebench(*args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    """The real command line, in a fresh process, as a user would run it."""
    return subprocess.run([*BRIDGEBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=os.environ | {"COLUMNS": "200", "PYTHONPATH": str(REPO)} | (env or {}))


def start_bridgebench(*args: str, cwd: Path, env: dict[str, str] | None = None, **popen: object
                      ) -> subprocess.Popen[str]:
    """The command line in the background, in its own process group (so a test can signal it as a
    terminal would)."""
    return subprocess.Popen([*BRIDGEBENCH, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            env=os.environ | {"PYTHONPATH": str(REPO)} | (env or {}), **popen)  # type: ignore[arg-type]


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


def chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on a file with a fresh profile, or skip the test when there is none."""
    exe = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if exe is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="bb-chromium-") as profile:
        done = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def rows(db: Path, query: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(query).fetchall()


def stored_iterations(db: Path) -> int:
    """Iterations stored in a store (every campaign), counted from the series' bytes."""
    return rows(db, "SELECT coalesce(sum(length(data)), 0) / 8 FROM series WHERE name = 'seconds'")[0][0]


def stored_times(db: Path) -> set[tuple[int, int, float]]:
    """Every stored iteration as (planned seq, 0-based index, seconds)."""
    out = set()
    for seq, data in rows(db, "SELECT e.seq, s.data FROM execution e JOIN series s ON s.execution_id = e.id"
                              " WHERE s.name = 'seconds'"):
        out |= {(seq, i, v) for i, v in enumerate(np.frombuffer(data, dtype="<f8").tolist())}
    return out


def _executions_stored(store: Path | str) -> int:
    if str(store).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(store)) as conn:
            try:
                return conn.execute("SELECT count(*) FROM execution").fetchone()[0]  # type: ignore[index]
            except psycopg.errors.UndefinedTable:
                return 0
    if not Path(store).exists():
        return 0
    try:
        return rows(Path(store), "SELECT count(*) FROM execution")[0][0]
    except sqlite3.OperationalError:
        return 0


def wait_for_executions(store: Path | str, at_least: int, timeout: float = 60) -> None:
    """Wait until a store (a file or postgresql://…) holds at least that many executions."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _executions_stored(store) >= at_least:
            return
        time.sleep(0.05)
    raise AssertionError("the campaign stored too few executions in time")


def gated_campaign(study: Path, cwd: Path, after: int, extra: tuple[str, ...] = ()
                   ) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """A campaign of 10 executions (5 × 2 mechanisms × 5 iterations; or as `extra` options say) whose timed
    executions stop at a gate after the first `after` of them: a test interrupts it at a known point,
    whatever the machine's speed. Returns the process and the environment that opens the gate for a resume
    once the gate file exists."""
    add_benchmark(study, "gate")
    env = {"PROBE_GATE": str(cwd / "gate"), "PROBE_GATE_AFTER": str(after)}
    pexecs = () if extra else ("-p", "5")
    proc = start_bridgebench("run", str(study), "--benchmarks", "gate", *pexecs, "-i", "5", *extra, cwd=cwd,
                             env=env)
    store = extra[extra.index("--store") + 1] if "--store" in extra else cwd / "results" / "bridgebench.sqlite"
    wait_for_executions(store, after)
    return proc, env


def stepped_mechanism(name: str, env: str, behaviour: str = "good", first: str = "") -> str:
    """A study file's table for mechanism `name` run by the stepped fixture probe with `behaviour` and the
    environment entries `env` (TOML, inside the braces); `first`, lines that go before its command."""
    return (f'[mechanisms.{name}]\n{first}commands = ["python3"]\n'
            f'run = ["python3", "{{study}}/stepped_probe.py", "{behaviour}", "{{iterations}}"]\n'
            f"env = {{ {env} }}\n")


def stepped_study(tmp_path: Path, name: str, text: str) -> Path:
    """A study file `text` in tmp_path/name, with the stepped fixture probe beside it."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(FIXTURES / "stepped_probe.py", folder / "stepped_probe.py")
    (folder / "study.toml").write_text(text)
    return folder / "study.toml"


# The files that take longest, longest first (pytest --durations, 2026-11-27). The workers take whole files in
# collection order (scripts/test.sh turns off xdist's own order, by number of tests), so that a long file with few
# tests is not handed out last, leaving one worker running it alone at the end. An order by a working tree's summed
# durations (the self-test's and lock-step's files first) was tried with three workers: CI rehearsals took 8 min 24 s
# and 8 min 22 s of pytest, this order 7 min 40 s, 8 min 5 s and 8 min 28 s (2026-11-30, docs/results.md): no
# difference the slow host's own could hide, so this order stays.
LONGEST_FIRST = ("test_luajit_consistency.py", "test_selftest.py", "test_db_binding.py", "test_load_campaign.py",
                 "test_diff_cli.py", "test_hostile.py", "test_adaptive.py", "test_nginx_logagg.py", "test_campaign.py",
                 "test_fleet.py", "test_store_backends.py", "test_instructions.py", "test_openapi_validate.py",
                 "test_lockstep.py", "test_baseline.py", "test_ci.py", "test_serialize.py")


def pytest_configure(config: pytest.Config) -> None:
    """Each xdist worker pins its lock-step blocks to a CPU of its own (the highest for gw0, the next for gw1, ...),
    not every worker's on the highest CPU while the other waits for work (docs/design.md, timing/lockstep.py)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    cpus = sorted(os.sched_getaffinity(0))
    if worker.startswith("gw") and worker[2:].isdigit() and len(cpus) > 1 and BLOCK_CPU not in os.environ:
        os.environ[BLOCK_CPU] = str(cpus[-1 - int(worker[2:]) % len(cpus)])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order kept


def copy_basic_study(folder: Path) -> Path:
    """A copy of the fixture study in folder, with its probe beside it: the study file's path."""
    shutil.copy(FIXTURES / "probe.py", folder / "probe.py")
    shutil.copytree(FIXTURES / "study-basic", folder / "study-basic")
    return folder / "study-basic" / "study.toml"


@pytest.fixture
def basic_study(tmp_path: Path) -> Path:
    """A copy of the fixture study (with its probe beside it) that a test may edit."""
    return copy_basic_study(tmp_path)


def add_benchmark(study_file: Path, name: str, param: int = 20000, check_param: int = 100) -> None:
    with study_file.open("a") as f:
        f.write(f"\n[benchmarks.{name}]\nparam = {param}\ncheck_param = {check_param}\n")


# --- a synthetic campaign, written through the store's API (exports, HTML, golden reports) ---------------
EVIL = "<script>alert('owned')</script>"


def synthetic_series(rng: np.random.Generator, kind: str, n: int, level: float) -> np.ndarray:
    """Seconds per iteration with a planted shape and a few outliers."""
    t = rng.normal(level, level * 0.01, n)
    if kind == "warmup":
        t[: n // 5] += level * 0.6
    elif kind == "slowdown":
        t[n // 2:] += level * 0.3
    t[rng.choice(n, size=max(1, n // 100), replace=False)] *= 4
    return np.abs(t)


def make_campaign(path: Path | str, *, benchmarks: tuple[str, ...] = ("fib", "n body"),
                  mechanisms: tuple[str, ...] = ("cpython", "lua/jit"), pexecs: int = 3,
                  iterations: int = 300, seed: int = 1, crash: bool = True,
                  stop_after: int | None = None, metric: str = "seconds") -> tuple[Store, int]:
    """A finished campaign in a new store at `path`: the first mechanism is the baseline and runs batched
    (4 calls per iteration) with allocation counters; the second warms up (and slows down in one
    execution); the last planned execution crashes with an HTML-looking stderr; "gone" is unavailable.
    With stop_after, only that many executions are stored and the campaign is left running. With metric
    "instructions" it is a counted campaign: each iteration also counts a billion instructions a second."""
    rng = np.random.default_rng(seed)
    store = Store(path)
    mechs = [*mechanisms, "gone"]
    options = {"budget": "default", "process_executions": pexecs, "iterations": iterations, "timeout_s": 60.0,
               "benchmarks": list(benchmarks), "mechanisms": mechs, "randomise": False, "seed": 0,
               **({"metric": metric} if metric != "seconds" else {})}
    config = {"study": {"study": {"name": "synthetic", "baseline": mechanisms[0]}}, "options": options}
    env = {"hostname": "box", "cpu_model": "Test  CPU @ 3.00GHz", "cpu_count": 8, "memory_gib": 16.0,
           "kernel": "6.1.0", "os": "Debian 12", "governor": "performance", "turbo": "off", "aslr": "full",
           "virtualisation": "none detected", "load_average": [0.1, 0.2, 0.3]}
    tasks = plan([(b, m) for b in benchmarks for m in mechanisms], pexecs)
    cid = store.create_campaign("synthetic", "/studies/synthetic/study.toml", "hash", config,
                                "0123456789abcdef", env, "machine-1", tasks)
    folder = Path("/nonexistent-build")  # the builds' folder: recorded nowhere, read by nothing here
    builds = {m: BuildResult(m, True, "", f"{m} 1.0", folder, f"build-{m}", False) for m in mechanisms}
    builds["gone"] = BuildResult("gone", False, "not found: gone-vm (Debian packages: gone-vm)", "",
                                 folder, "", False)
    store.record_builds(cid, builds, {m: m.upper() for m in mechs})
    store.record_check(cid, [(b, m, "agrees", "42", "", 1, None, None) for b in benchmarks for m in mechanisms])
    for task in tasks[:stop_after]:
        if crash and task is tasks[-1]:
            run = Execution(CRASHED, "exit status 1: boom", 1, f"Traceback\n{EVIL}\n", None, 1000, 0.0, 0.1)
        else:
            b, m = benchmarks.index(task.benchmark), mechanisms.index(task.mechanism)
            level = 1e-3 * (1 + b) * (1 + 0.5 * m)
            kind = "flat"
            if task.mechanism != mechanisms[0]:
                kind = "slowdown" if task.pexec == 1 and task.benchmark == benchmarks[-1] else "warmup"
            times = synthetic_series(rng, kind, iterations, level)
            batch, counters = 1, {}
            if task.mechanism == mechanisms[0]:
                batch = 4
                times = times * batch
                counters = {"bytes_per_op": [64.0] * iterations, "allocs_per_op": [2.0] * iterations}
            if metric == "instructions":
                counters["instructions"] = [float(round(t * 1e9)) for t in times]
            out = ProbeOutput([float(x) for x in times], "42", batch, counters, {"vm": task.mechanism})
            run = Execution(OK, "", 0, "", out, 20480, 0.0, float(times.sum()))
        store.record_execution(cid, task, run)
    if stop_after is None:
        store.set_state(cid, "done")
    return store, cid


def analysed(tmp_path: Path, **kwargs: Any) -> tuple[Series, Analysis]:
    """make_campaign's campaign, analysed: its series (series.store is the store) and the result."""
    store, cid = make_campaign(tmp_path / "s.sqlite", **kwargs)
    result = analyse(store, cid)
    return Series(store, result.metric), result


# --- a throwaway PostgreSQL server (Debian's package), for the store's second backend ---------------------
def _pg_bin(tool: str) -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"), key=lambda p: int(p.parts[-3]))
    return found[-1] if found else None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server of its own, listening only on a unix socket in a temporary folder, stopped at the
    end of the session; yields the socket folder. As root it runs as the `postgres` user (initdb refuses
    root). Skipped, saying why, where PostgreSQL is not installed (scripts/install.sh --dev installs it)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL is not installed (bash scripts/install.sh --fleet installs it)")
    base = Path(tempfile.mkdtemp(prefix="bridgebench-pg-"))  # not under pytest's root-only folders
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    as_user: list[str] = []
    user = os.environ.get("USER") or "postgres"
    if os.geteuid() == 0:
        as_user, user = ["runuser", "-u", "postgres", "--"], "postgres"
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")
    subprocess.run([*as_user, str(initdb), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True, timeout=120)
    subprocess.run([*as_user, str(pg_ctl), "-D", str(data), "-l", str(base / "log"), "-w", "-t", "60", "-o",
                    f"-c listen_addresses='' -k {sock} -c fsync=off", "start"], check=True, capture_output=True,
                   timeout=90)
    (base / "restart.json").write_text(json.dumps([as_user, str(pg_ctl), str(data), str(sock), str(base / "log")]))
    try:
        yield f"postgresql://{user}@/postgres?host={sock}"
    finally:
        _stop_postgres(as_user, str(pg_ctl), data)
        shutil.rmtree(base, ignore_errors=True)


def _stop_postgres(as_user: list[str], pg_ctl: str, data: Path) -> None:
    """Stop the test server and wait until none of its processes is left (its backends end a moment after
    the postmaster)."""
    try:
        postmaster = int((data / "postmaster.pid").read_text().split()[0])
        pids = {postmaster, *(int(p) for p in subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True,
                                                             text=True).stdout.split())}
    except (OSError, ValueError, IndexError):
        pids = set()
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True, timeout=60)
    deadline = time.monotonic() + 30
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if Path(f"/proc/{p}").exists()}
        time.sleep(0.05)


def restart_postgres(dsn: str) -> None:
    """Restart the test server behind `dsn` (a fast shutdown: sessions are cut, as on a real restart)."""
    sock = Path(dsn.split("host=", 1)[1].split("&")[0])
    as_user, pg_ctl, data, sock_, log = json.loads((sock.parent / "restart.json").read_text())
    subprocess.run([*as_user, pg_ctl, "-D", data, "-l", log, "-m", "fast", "-w", "-t", "60", "-o",
                    f"-c listen_addresses='' -k {sock_} -c fsync=off", "restart"], check=True, capture_output=True,
                   timeout=90)


@pytest.fixture
def postgres_db(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the test server; dropped afterwards. Yields its connection string."""
    import psycopg

    name = f"t{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield postgres_server.replace("@/postgres?", f"@/{name}?")
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store test runs on both backends: a new SQLite file, and a new PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "s.sqlite")
    return request.getfixturevalue("postgres_db")


# --- processes a test started, found by a marker in their environment -------------------------------------
def marked_processes(marker: str) -> list[int]:
    """Processes whose environment carries the marker: the launcher, the probe and all it started."""
    found = []
    needle = f"PROBE_MARKER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def survivors(marker: str, bound_s: float = 30) -> list[int]:
    """What is still running after cleanup has had `bound_s` to act (a bound on a wait, not a speed
    claim: the check returns as soon as nothing is left)."""
    deadline = time.monotonic() + bound_s
    while (found := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in found:  # never leave them to the next test, whatever this one asserts
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    value = f"bridgebench-test-{uuid.uuid4().hex}"
    yield value
    survivors(value, bound_s=0)


# --- a CPU-bound competitor, for the disturbance audit's tests --------------------------------------------
SPIN = "import sys; print('spinning', flush=True)\nwhile True: pass"


def start_spinning(*prefix: str) -> subprocess.Popen[str]:
    """A CPU-bound process, returned once it is in its loop (so how long it takes to start does not matter)."""
    proc = subprocess.Popen([*prefix, sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "spinning"
    return proc


@contextlib.contextmanager
def competitor() -> Iterator[subprocess.Popen[str]]:
    """A real CPU-bound process beside the benchmark, stopped whatever happens."""
    proc = start_spinning()
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
