"""What the fleet itself costs (issue #12): a benchmark, not a test. Needs a PostgreSQL server; give it an
empty database:

    .venv/bin/python evidence/fleet_overhead.py postgresql://user@host/emptydb [--jobs 200]

It measures, one after another:
1. claim + record per job: a real `bridgebench worker` runs JOBS queued executions of a benchmark that does
   nothing (the fixture probe of tests/, one iteration); the worker's wall time minus the executions' own
   wall time, per job, is what taking a job from the queue, reading the campaign and storing the result cost;
2. iterations stored per second through COPY: 20 executions of 100 000 iterations (and their CPU-time
   counter) stored through the store's API;
3. analysing a 1 000 000-iteration synthetic campaign (evidence/analysis_scale.py's) read back from
   PostgreSQL, against the same campaign in an SQLite file, each by `bridgebench analyse` in a child process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from analysis_scale import build_store, timed

from bridgebench.protocol import ProbeOutput
from bridgebench.runner import OK, Execution, Task
from bridgebench.store import Store

REPO = Path(__file__).resolve().parents[1]

BRIDGEBENCH = str(REPO / ".venv" / "bin" / "bridgebench")


def claim_and_record(dsn: str, jobs: int, work: Path) -> float:
    """Seconds per job the queue and the store add around an execution."""
    shutil.copy(REPO / "tests" / "fixtures" / "probe.py", work / "probe.py")
    shutil.copytree(REPO / "tests" / "fixtures" / "study-basic", work / "study-basic")
    study = work / "study-basic" / "study.toml"
    done = subprocess.run([BRIDGEBENCH, "enqueue", str(study), "--benchmarks", "ok", "--mechanisms", "a", "-p",
                           str(jobs), "-i", "1", "--store", dsn, "--json"], cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: enqueue: {done.stderr.strip()[-300:]}")
    cid = json.loads(done.stdout)["campaign"]
    t0 = time.perf_counter()
    worker = subprocess.run([BRIDGEBENCH, "worker", "--until-done", "--campaign", str(cid), "--store", dsn],
                            cwd=work, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if worker.returncode != 0:
        sys.exit(f"error: worker: {worker.stderr.strip()[-300:]}")
    executions = Store(dsn, create=False).executions(cid)
    if len(executions) != jobs:
        sys.exit(f"error: {len(executions)} of {jobs} executions stored")
    return (wall - sum(e.wall_s for e in executions)) / jobs


def copy_rate(dsn: str) -> float:
    store = Store(dsn)
    tasks = [Task(i, "b", "m", i) for i in range(20)]
    cid = store.create_campaign("copy", "-", "-", {"options": {}}, "-", {}, "-", tasks)
    rng = np.random.default_rng(0)
    n, spent = 100_000, 0.0
    for i in range(20):
        times = (rng.random(n) * 1e-3).tolist()
        run = Execution(OK, "", 0, "", ProbeOutput(times, "1", 1, {"cpu_s": times}, {}), None, 0.0, 1.0)
        t0 = time.perf_counter()
        store.record_execution(cid, Task(i, "b", "m", i), run)
        spent += time.perf_counter() - t0
    return 20 * n / spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dsn", help="An empty PostgreSQL database: postgresql://…")
    ap.add_argument("--jobs", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bridgebench-fleet-"))
    try:
        load_before = os.getloadavg()
        per_job = claim_and_record(args.dsn, args.jobs, work)
        rate = copy_rate(args.dsn)
        shape = (10, 5, 10, 2000)  # 1 000 000 iterations
        pg_cid, _ = build_store(args.dsn, *shape, seed=1)
        build_store(work / "s.sqlite", *shape, seed=1)
        pg = timed([BRIDGEBENCH, "analyse", str(pg_cid), "--store", args.dsn, "--json"])
        lite = timed([BRIDGEBENCH, "analyse", "1", "--store", str(work / "s.sqlite"), "--json"])
        figures = {"claim_and_record_ms_per_job": 1e3 * per_job, "jobs": args.jobs,
                   "copy_iterations_per_s": rate, "analyse_1M_postgresql_s": pg[0], "analyse_1M_sqlite_s": lite[0],
                   "postgresql_over_sqlite": pg[0] / lite[0], "load_before": load_before,
                   "load_after": os.getloadavg()}
        print(json.dumps(figures, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
