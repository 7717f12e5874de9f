"""The store's interface, the same on both backends: every test here runs on a new SQLite file and on a
new database of a real PostgreSQL server started for the session (conftest.postgres_server)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from bridgebench.build import BuildResult
from bridgebench.protocol import ProbeOutput
from bridgebench.runner import OK, Execution, Task
from bridgebench.store import SCHEMA_VERSION, SECONDS, CampaignBusy, Store, StoreMissing
from bridgebench.timing.analysis import analyse
from tests.conftest import REPO, bridgebench, gated_campaign, make_campaign

TASKS = [Task(i, b, m, p) for i, (p, b, m) in enumerate((p, b, m) for p in range(2) for b in ("x", "y")
                                                          for m in ("a", "b"))]


def _campaign(store: Store) -> int:
    cid = store.create_campaign("s", "/s/study.toml", "h", {"options": {"budget": "default"}}, "sha",
                                {"cpu_model": "c"}, "machine-1", TASKS)
    builds = {m: BuildResult(m, True, "", f"{m} 1", Path("/b"), f"hash-{m}", False) for m in ("b", "a")}
    store.record_builds(cid, builds, {"a": "A", "b": "B"})
    store.record_check(cid, [("y", "b", "agrees", "1", "", 4, 9, True),
                             ("x", "a", "agrees", "1", "", None, None, None)])
    return cid


def _run(times: list[float], counters: dict[str, list[float]] | None = None) -> Execution:
    return Execution(OK, "", 0, "tail", ProbeOutput(times, "1", 2, counters or {}, {"setup_s": 0.5}), 1234, 1.0,
                     sum(times))


def test_a_campaign_reads_back_as_written(store_location: str) -> None:
    store = Store(store_location)
    cid = _campaign(store)
    assert [c.id for c in store.campaigns()] == [cid] and store.latest_campaign("s").id == cid  # type: ignore[union-attr]
    c = store.campaign(cid)
    assert (c.study, c.machine, c.state, c.config, c.environment) == ("s", "machine-1", "running",
                                                                     {"options": {"budget": "default"}},
                                                                     {"cpu_model": "c"})
    assert [b["mechanism"] for b in store.builds(cid)] == ["b", "a"]  # in the order recorded
    assert store.builds(cid)[0] | {} == {"mechanism": "b", "label": "B", "available": True, "reason": "",
                                          "version": "b 1", "build_hash": "hash-b"}
    assert [(r["benchmark"], r["batch"], r["iterations"]) for r in store.check_answers(cid)] == [("y", 4, 9),
                                                                                      ("x", None, None)]
    store.record_builds(cid, {"a": BuildResult("a", False, "gone", "", Path("/b"), "", False)}, {"a": "A2"})
    assert [(b["mechanism"], b["label"], b["available"]) for b in store.builds(cid)] == [("b", "B", True),
                                                                                         ("a", "A2", False)]
    assert store.planned(cid) == TASKS and store.pending(cid) == TASKS
    store.set_state(cid, "done")
    assert store.campaign(cid).finished is not None


def test_iterations_and_counters_come_back_bit_for_bit(store_location: str) -> None:
    store = Store(store_location)
    cid = _campaign(store)
    rng = np.random.default_rng(0)
    times = (rng.random(5000) * 1e-3 + 1e-17).tolist()
    cpu = [t * 0.9 for t in times]
    eid = store.record_execution(cid, TASKS[0], _run(times, {"cpu_s": cpu, "bytes_per_op": [1.5] * 5000}))
    (e,) = store.executions(cid)
    assert (e.id, e.seq, e.batch, e.peak_rss_kb, e.stderr_tail) == (eid, 0, 2, 1234, "tail")
    assert json.loads(e.info_json or "{}") == {"setup_s": 0.5}
    assert store.times(eid).tolist() == times
    assert store.counter(eid, "cpu_s").tolist() == cpu
    assert store.counter(eid, "absent").size == 0
    both = store.series([eid], (SECONDS, "cpu_s"))
    assert both[(eid, SECONDS)].tolist() == times and both[(eid, "cpu_s")].tolist() == cpu
    assert store.iteration_count(cid) == 5000
    assert store.pending(cid) == TASKS[1:] and store.done_seqs(cid) == {0}


def test_a_value_the_database_cannot_hold_stores_nothing(store_location: str) -> None:
    store = Store(store_location)
    cid = _campaign(store)
    bad = Execution(OK, "", 0, "", ProbeOutput([1.0], "1", 10**30, {}, {}), None, 0.0, 1.0)  # batch too big
    with pytest.raises(ValueError):
        store.record_execution(cid, TASKS[0], bad)
    assert store.executions(cid) == [] and store.iteration_count(cid) == 0
    store.record_execution(cid, TASKS[0], _run([1.0]))  # the store is still usable
    assert len(store.executions(cid)) == 1


def test_the_plan_grows_and_shrinks_and_decisions_are_replaced(store_location: str) -> None:
    store = Store(store_location)
    cid = _campaign(store)
    store.record_execution(cid, TASKS[0], _run([1.0, 2.0]))
    store.add_planned(cid, [Task(8, "x", "a", 2)])
    assert len(store.planned(cid)) == 9
    assert store.drop_unrun(cid) == 8
    assert store.planned(cid) == [TASKS[0]] and store.pending(cid) == []
    store.record_decisions(cid, 0, [("x", "a", 1, "flat", 0.5, "open", "CI wide", 30.0)])
    store.record_decisions(cid, 0, [("x", "a", 1, "flat", 0.01, "settled", "CI narrow", None)])
    assert [(d["state"], d["half_width"], d["wait_projection_s"]) for d in store.decisions(cid)] == [
        ("settled", 0.01, None)]


def test_the_analysis_is_cached_and_replaced(store_location: str) -> None:
    store = Store(store_location)
    cid = _campaign(store)
    assert store.analysis(cid) is None
    store.save_analysis(cid, {"version": 1, "x": [1.5]})
    store.save_analysis(cid, {"version": 1, "x": [2.5]})
    assert store.analysis(cid) == {"version": 1, "x": [2.5]}


def test_one_harness_at_a_time_owns_a_campaign(store_location: str) -> None:
    store = Store(store_location)
    cid = _campaign(store)
    other = Store(store_location)
    with store.claim(cid):
        with pytest.raises(CampaignBusy, match=f"campaign {cid} is being run by another bridgebench"):
            other.claim(cid)
        with other.claim(cid + 1):  # another campaign is free
            pass
    other.claim(cid).release()  # released with its holder

    order = []
    with store.planning():
        waiter = threading.Thread(target=lambda: (other.planning().release(), order.append("second")))
        waiter.start()
        time.sleep(0.3)
        order.append("first")  # the second planner waits for the first, however long it takes
    waiter.join(timeout=30)
    assert order == ["first", "second"]


def test_a_read_only_command_never_creates_a_store(store_location: str) -> None:
    with pytest.raises(StoreMissing, match="no "):
        Store(store_location, create=False)
    Store(store_location).close()
    Store(store_location, create=False).close()


def test_both_backends_give_the_same_analysis(tmp_path: Path, postgres_db: str) -> None:
    """The same campaign written to a file and to PostgreSQL analyses to the same numbers."""
    lite, cid_lite = make_campaign(tmp_path / "s.sqlite", pexecs=2, iterations=200)
    pg, cid_pg = make_campaign(postgres_db, pexecs=2, iterations=200)
    a, b = analyse(lite, cid_lite), analyse(pg, cid_pg)
    assert a.cells == b.cells and a.geomean_ratio == b.geomean_ratio and a.check == b.check
    assert a.mechanisms == b.mechanisms


# --- the command line on a PostgreSQL store ---------------------------------------------------------------
def test_every_command_works_on_a_postgresql_store_and_no_password_leaks(basic_study: Path, tmp_path: Path,
                                                                        postgres_db: str) -> None:
    secret = "s3cret-Pa55"
    dsn = postgres_db.replace("postgresql://postgres@", f"postgresql://postgres:{secret}@")
    store = ("--store", dsn)
    ran = bridgebench("run", str(basic_study), "--benchmarks", "ok", "-p", "2", "-i", "60", *store,
                      "--report-dir", str(tmp_path / "reports"), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    outputs = [ran.stdout + ran.stderr]
    for args in (("list",), ("analyse", "1"), ("report", "1", "--format", "markdown"), ("diff", "1:a", "1:b"),
                 ("report", "--format", "csv")):
        done = bridgebench(*args, *store, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
        outputs.append(done.stdout + done.stderr)
    listing, analysed, markdown, diff, csv_text = outputs[1:]
    assert "Steady state" in analysed
    assert "basic" in listing and "postgresql://postgres@" in listing  # the store, shown without its password
    assert "Mechanism A" in markdown and "| ok |" in markdown
    assert "1:a vs 1:b" in diff or "1:a" in diff
    assert len(csv_text.splitlines()) == 1 + 2 * 2 * 60
    reports = "".join(p.read_text() for p in (tmp_path / "reports").iterdir())
    assert all(secret not in text for text in (*outputs, reports))
    import psycopg

    with psycopg.connect(postgres_db) as conn:
        stored = conn.execute("SELECT config_json || environment_json FROM campaign").fetchone()[0]
        stored += "".join(r[0] for r in conn.execute("SELECT result_json FROM analysis"))
    assert secret not in stored
    missing = bridgebench("report", "--store", postgres_db.replace("/t", "/nothere_t"), cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and len(missing.stderr.splitlines()) == 1


def test_an_interrupted_campaign_resumes_exactly_on_postgresql(basic_study: Path, tmp_path: Path,
                                                               postgres_db: str) -> None:
    proc, env = gated_campaign(basic_study, tmp_path, after=3, extra=("-p", "5", "--store", postgres_db))
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    (tmp_path / "gate").touch()
    resumed = bridgebench("run", str(basic_study), "--resume", "--store", postgres_db, cwd=tmp_path, env=env,
                          timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    store = Store(postgres_db, create=False)
    seqs = sorted(e.seq for e in store.executions(1))
    assert seqs == list(range(10))  # every planned execution once: nothing lost, nothing twice
    assert store.campaign(1).state == "done"


def test_a_planned_execution_is_stored_once_whoever_stores_it(store_location: str) -> None:
    from bridgebench.store import AlreadyStored

    store = Store(store_location)
    cid = _campaign(store)
    store.record_execution(cid, TASKS[0], _run([1.0]), machine="m1")
    with pytest.raises(AlreadyStored):
        Store(store_location).record_execution(cid, TASKS[0], _run([2.0]), machine="m2")
    (e,) = store.executions(cid)
    assert (e.machine, store.times(e.id).tolist()) == ("m1", [1.0])
    store.record_machine("m1", {"cpu_model": "x"})
    store.record_machine("m1", {"cpu_model": "y"})
    assert store.machines() == {"m1": {"cpu_model": "y"}}


def test_the_self_test_judges_its_campaigns_on_a_postgresql_store(tmp_path: Path, postgres_db: str) -> None:
    # One benchmark of the quick budget, run as a campaign and judged by `selftest --rejudge`: the store is the
    # point, and the self-test's own runs are campaigns as `run` makes them (its whole quick budget, four times
    # this, is tests/test_selftest.py's)
    ran = bridgebench("run", "selftest", "--budget", "quick", "--benchmarks", "steady", "--store", postgres_db,
                      "--build-dir", str(tmp_path / "build"), cwd=tmp_path, timeout=600)
    assert ran.returncode == 0, ran.stderr
    done = bridgebench("selftest", "--rejudge", "--json", "--store", postgres_db, cwd=tmp_path)
    assert done.returncode in (0, 5), done.stderr  # 5: a wrong verdict on a noisy day; the store is the point
    report = json.loads(done.stdout)
    assert {f["subject"].split(" ")[0] for f in report["findings"]} == {"steady"}  # the one benchmark it ran
    assert report["verdict"] in ("pass", "fail", "inconclusive")
    store = Store(postgres_db, create=False)
    (campaign,) = store.campaigns("selftest")
    assert campaign.state == "done" and store.analysis(campaign.id) is not None


def test_one_planned_execution_is_read_without_the_whole_plan(store_location: str) -> None:
    store = Store(store_location)
    cid = _campaign(store)
    assert store.planned_task(cid, 3) == TASKS[3] and store.planned_task(cid, 99) is None
    assert not store.is_stored(cid, 0) and store.pending_count(cid) == len(TASKS)
    store.record_execution(cid, TASKS[0], _run([1.0]))
    assert store.is_stored(cid, 0) and store.pending_count(cid) == len(TASKS) - 1 == len(store.pending(cid))


def test_a_file_store_never_loads_psycopg_and_a_postgresql_store_without_it_says_how_to_install_it(
        tmp_path: Path) -> None:
    # In a fresh interpreter: every command imports the store, and only a PostgreSQL store needs psycopg.
    code = f"""
import sys
from bridgebench import cli
from bridgebench.store import Store, StoreError
Store({str(tmp_path / "s.sqlite")!r}).close()
assert "psycopg" not in sys.modules, "a file store loaded psycopg"
sys.modules["psycopg"] = None  # as if not installed: importing it raises ImportError
try:
    Store("postgresql://nobody:secret@127.0.0.1:1/none?password=secret")  # shown without either password
except StoreError as err:
    print(err)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == [
        "postgresql://nobody@127.0.0.1:1/none: PostgreSQL stores need psycopg: run `bash scripts/install.sh --fleet`"]


def test_a_version_10_stores_waits_are_read_once_out_of_their_reasons(store_location: str) -> None:
    """Before schema 11 nearest first said a benchmark waited only in its cells' reasons; opened now, those rows
    gain the projection the reason gave (without a figure: more than any campaign runs), and no other row does,
    on either backend: the PostgreSQL store adds the column to a live schema-10 database."""
    store = Store(store_location)
    cid = store.create_campaign("x", "x", "h", {}, "sha", {}, "m", [Task(0, "b", "m", 0)])
    waits = ("; waits this round: as they stand, its ratios would take about 57 s more, and nearer answers come "
             "first (120 s left)")
    endless = "; waits this round: as they stand, its ratios would take more blocks than any campaign runs, and …"
    with store.transaction() as db:  # as schema 10 wrote them
        db.execute("ALTER TABLE cell_decision DROP COLUMN wait_projection_s")
        db.executemany("INSERT INTO cell_decision VALUES (?, ?, ?, ?, 3, NULL, NULL, 'open', ?)",
                       [(cid, 0, "a", "m", "undecided" + waits), (cid, 0, "b", "m", "undecided" + endless),
                        (cid, 0, "c", "m", "undecided"), (cid, 1, "a", "m", "undecided")])
        db.execute("UPDATE meta SET value='10' WHERE key='schema_version'")
    store.close()
    again = Store(store_location)
    try:
        got = {(d["round"], d["benchmark"]): d["wait_projection_s"] for d in again.decisions(cid)}
        version = again.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    finally:
        again.close()
    assert got == {(0, "a"): 57.0, (0, "b"): math.inf, (0, "c"): None, (1, "a"): None}
    assert version == str(SCHEMA_VERSION) == "11"
