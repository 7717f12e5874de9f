"""The db-binding study on a real GT.M (Debian's fis-gtm, installed from the study's Debian list): every
mechanism gives the same answers at the quick budget, the binding module's three styles and two kinds of node
object agree on awkward data, a crash inside GT.M is a failed execution, a missing or damaged database is a
one-line error, and nothing (shared memory, semaphores) is left behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from bridgebench.runner import ask_to_stop, launcher
from tests.conftest import REPO, bridgebench

STUDY = REPO / "studies" / "db-binding"
BUILD = REPO / "build"  # the study's databases are cached builds, shared with `bridgebench run`
LUA = {"lua5.4": "lua54", "luajit": "luajit"}

# ^T as the binding tests (lua/test_binding.lua) expect it: an empty tree, one node, numeric and string
# subscripts with commas and quotes, a first subscript with both, and enough nodes to cross batches.
TEST_DATA = '''\
set ^T("empty")="a value, no children"
set ^T("one",7)="seven"
set ^T("mixed",-3)="m3",^T("mixed",1)="one",^T("mixed",1.5)="1.5",^T("mixed",2)="",^T("mixed",10)="ten"
set ^T("mixed","01")="zero one",^T("mixed","a")="a,",^T("mixed","a,b")="""",^T("mixed","q""uote")="q"""
set ^T("mixed","x,y""z")="v"
set ^T("s1,""q",1)="x",^T("s1,""q",2)="y"
for i=1:1:2500 set ^T("many",i)=i*2
'''


def ipc_ids(kind: str) -> set[str]:
    """Ids of the System V shared memory segments (-m) or semaphore sets (-s) that exist now, but for those of
    a live PostgreSQL server: another test file's, running beside this one (pytest -n), whose segment would
    otherwise count as GT.M's leftover."""
    out = subprocess.run(["ipcs", kind], capture_output=True, text=True).stdout
    ids = {line.split()[1] for line in out.splitlines() if line.startswith("0x")}
    return ids - postgres_segments() if kind == "-m" else ids


def postgres_segments() -> set[str]:
    """Shared memory segments whose creator is alive and is a PostgreSQL server (it keeps a small System V
    segment as an interlock for as long as it runs)."""
    out = subprocess.run(["ipcs", "-m", "-p"], capture_output=True, text=True).stdout
    held = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit():
            try:
                creator = Path(f"/proc/{fields[2]}/comm").read_text().strip()
            except OSError:  # gone: whatever it left is a leftover
                continue
            if creator.startswith("postgres"):
                held.add(fields[0])
    return held


def gtm(build: Path, *command: str, stdin: str | None = None, study: Path = STUDY,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A command in the GT.M environment of a database under build (gtmenv.sh)."""
    return subprocess.run(["bash", str(study / "gtmenv.sh"), str(build), *command], input=stdin,
                          capture_output=True, text=True, timeout=300, env=os.environ | (env or {}))


def small_study(tmp_path: Path) -> Path:
    """A copy of the study whose databases hold 100 nodes, so a test can build it in seconds, with a
    benchmark `small` that reads them."""
    copy = tmp_path / "db-binding"
    shutil.copytree(STUDY, copy)
    toml = copy / "study.toml"
    toml.write_text(toml.read_text().replace("setup.sh {build} 1000000", "setup.sh {build} 100")
                    + '\n[benchmarks.small]\nparam = "get 100"\nexpect = "100 15150"\n')
    return copy


def test_every_mechanism_gives_the_same_answers_and_leaves_nothing_behind(tmp_path: Path) -> None:
    before = ipc_ids("-m"), ipc_ids("-s")
    # One timed execution of two iterations a cell is enough to see every probe step in a block and leave
    # nothing behind (the answers are checked before any is timed); more only made the test longer.
    done = bridgebench("run", "db-binding", "--quick", "-p", "1", "-i", "2", "--store", str(tmp_path / "s.sqlite"),
                       "--report-dir", str(tmp_path), "--build-dir", str(BUILD), "--json", cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    available = {m["mechanism"] for m in result["mechanisms"] if m["available"]}
    lua = {f"{vm}-{style}" for vm in LUA.values() for style in ("naive", "cached", "batched")}
    assert available == {"m-native", "c-callin", "c-batched", "python-ctypes", "go-cgo", "node-nodem"} | lua, \
        [m["reason"] for m in result["mechanisms"]]
    expected = {"traverse": "1000000 500000500000", "traverse-100k": "100000 5000050000",
                "get": "10000 150015000", "set": "10000 50005000",
                "node-create": '40000 demographics("country","person","10000","gender")'}
    assert {(r["benchmark"], r["status"], r["answer"]) for r in result["check"]} == {
        (b, "agrees", a) for b, a in expected.items()}
    assert all(r["stepped"] for r in result["check"])  # every probe, M's, C's, Python's and Node's too, steps
    ran = {(c["benchmark"], c["mechanism"]) for c in result["cells"]}
    assert ("traverse", "lua54-naive") not in ran and ("node-create", "m-native") not in ran
    assert ("traverse", "luajit-batched") in ran and ("node-create", "luajit-cached") in ran
    assert ("set", "node-nodem") not in ran and ("get", "node-nodem") in ran  # nodem's set fails on GT.M
    assert len(ran) == 7 + 12 + 12 + 11 + 4
    assert all(c["executions_ok"] == 1 and c["steady_performance"] for c in result["cells"])
    report = (tmp_path / f"db-binding-{result['campaign']['id']}.md").read_text()
    assert "| traverse | traverse 1000000 | m-native, c-callin, c-batched, lua54-cached" in report
    left = ipc_ids("-m") - before[0], ipc_ids("-s") - before[1]
    assert left == (set(), set()), holders(BUILD / "db-binding", left[0])


def holders(build: Path, shmids: set[str]) -> dict[str, str]:
    """Which of the databases under build records each leftover segment in its header (mupip ftok), with the
    segments' creators and last users (ipcs -p): what a leftover's failure message needs to be traced."""
    found = {}
    for dat in sorted(build.glob("*/db/bcat.dat")):
        shmid = recorded_shmid(dat)
        if shmid in shmids:
            found[shmid] = dat.parent.parent.name
    pids = [line for line in subprocess.run(["ipcs", "-m", "-p"], capture_output=True, text=True).stdout.splitlines()
            if line.split()[:1] and line.split()[0] in shmids]
    return {"databases": str(found), "creators and last users": " | ".join(pids)}


def recorded_shmid(dat: Path) -> str | None:
    """The shared memory segment a database's file header records (mupip ftok; None: none, -1)."""
    dist = sorted(Path("/usr/lib").glob("*/fis-gtm/V*"))[-1]  # as gtmenv.sh finds it; gtmenv.sh would run it down
    done = subprocess.run([str(dist / "mupip"), "ftok", str(dat)], capture_output=True, text=True,
                          env=os.environ | {"gtm_dist": str(dist)})
    out = done.stdout + done.stderr  # mupip prints its table on stderr
    line = next((ln for ln in out.splitlines() if ln.startswith(str(dat))), "")
    fields = [f.split("[")[0].strip() for f in line.split("::")]  # file :: semid :: shmid :: ...
    return fields[2] if len(fields) >= 3 and fields[2] != "-1" else None


@pytest.fixture(scope="module")
def test_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throw-away database holding ^T (TEST_DATA), and the Lua mechanisms' builds of the bbgtm module."""
    built = bridgebench("build", "db-binding", "--mechanisms", "lua54-cached,luajit-cached", "--build-dir",
                        str(BUILD), cwd=REPO, timeout=600)
    assert built.returncode == 0, built.stderr
    build = tmp_path_factory.mktemp("gtm")
    made = subprocess.run(["bash", str(STUDY / "gtmenv.sh"), "--build", str(build), "bash",
                           str(STUDY / "setup.sh"), str(build), "10"], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    filled = gtm(build, "sh", "-c", 'exec "$gtm_dist/mumps" -direct', stdin=TEST_DATA)
    assert filled.returncode == 0 and "-E-" not in filled.stdout, filled.stdout
    return build


@pytest.mark.parametrize("vm", sorted(LUA))
def test_binding_styles_and_node_objects_agree_on_awkward_data(test_database: Path, vm: str) -> None:
    wiped = gtm(test_database, "sh", "-c", 'exec "$gtm_dist/mumps" -direct',
                stdin='kill ^T("w-naive"),^T("w-cached"),^T("w-batched")\n')  # what the other VM's run wrote
    assert wiped.returncode == 0
    lua_cpath = str(BUILD / "db-binding" / f"{LUA[vm]}-cached" / "?.so")
    tested = gtm(test_database, vm, str(STUDY / "lua" / "test_binding.lua"),
                 env={"LUA_CPATH": lua_cpath, "LUA_PATH": str(STUDY / "lua" / "?.lua")})
    assert tested.returncode == 0, tested.stderr
    assert re.fullmatch(r"ok \d{4,}\n", tested.stdout), tested.stdout


def test_a_crash_inside_gtm_is_a_failed_execution_and_the_campaign_goes_on(tmp_path: Path) -> None:
    study = small_study(tmp_path)
    # next^bbci sends itself SIGSEGV at node 15: past the answer check (10 nodes), inside every timed run.
    routine = study / "m" / "bbci.m"
    routine.write_text(routine.read_text().replace(
        ' quit $order(^BCAT("lvd",x))', ' if x=15 set x=$zsigproc($job,11)\n quit $order(^BCAT("lvd",x))'))
    with (study / "study.toml").open("a") as f:
        f.write('\n[benchmarks.crashes]\nparam = "traverse 20"\ncheck_param = "traverse 10"\n')
    before = ipc_ids("-m"), ipc_ids("-s")
    done = bridgebench("run", str(study), "--benchmarks", "crashes", "--mechanisms", "m-native,c-callin", "-p", "2",
                       "-i", "3", "--store", str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path),
                       "--build-dir", str(tmp_path / "build"), "--json", cwd=tmp_path, timeout=600)
    assert done.returncode == 4, done.stderr  # completed, with failed executions
    cells = {c["mechanism"]: c for c in json.loads(done.stdout)["cells"]}
    assert cells["m-native"]["executions_ok"] == 2
    assert cells["c-callin"]["executions_ok"] == 0
    assert [f["status"] for f in cells["c-callin"]["failures"]] == ["crashed", "crashed"]
    assert (ipc_ids("-m") - before[0], ipc_ids("-s") - before[1]) == (set(), set())


def test_a_missing_or_damaged_database_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    study = small_study(tmp_path)
    build = tmp_path / "build"
    args = ("run", str(study), "--benchmarks", "small", "--mechanisms", "m-native", "-p", "1", "-i", "3",
            "--store", str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path), "--build-dir", str(build))
    assert bridgebench(*args, cwd=tmp_path, timeout=600).returncode == 0
    database = build / "db-binding" / "m-native" / "db" / "bcat.dat"
    with database.open("r+b") as f:
        f.write(b"\x00garbage\x00" * 100)
    damaged = bridgebench(*args, cwd=tmp_path, timeout=600)
    assert damaged.returncode == 3, damaged.stderr  # the answer check failed: nothing was timed
    assert f"{database} is not a GT.M database (its header is damaged); remove " in damaged.stderr
    database.unlink()
    missing = bridgebench(*args, cwd=tmp_path, timeout=600)
    assert missing.returncode == 3, missing.stderr
    assert f"the database file {database} is missing; remove " in missing.stderr
    # The fix the message gives works: the next run builds the database again.
    shutil.rmtree(build / "db-binding" / "m-native")
    assert bridgebench(*args, cwd=tmp_path, timeout=600).returncode == 0


def probe_with_the_database_open(*prefix: str) -> tuple[subprocess.Popen[bytes], tuple[set[str], set[str]]]:
    """m-native's probe on a long traverse (after `prefix`, e.g. the launcher), once it has the database open
    (its shared memory segment exists), and the segments and semaphore sets that existed before it."""
    built = bridgebench("build", "db-binding", "--mechanisms", "m-native", "--build-dir", str(BUILD),
                        cwd=REPO, timeout=600)
    assert built.returncode == 0, built.stderr
    before = ipc_ids("-m"), ipc_ids("-s")
    probe = subprocess.Popen([*prefix, "bash", str(STUDY / "gtmenv.sh"), str(BUILD / "db-binding" / "m-native"),
                              "sh", "-c", 'exec "$gtm_dist/mumps" -run bbprobe 100000 "traverse 1000000"'],
                             stdout=subprocess.DEVNULL, start_new_session=True)
    # Open means its segment is in the database's header: GT.M makes the segment first and records it after, and a
    # probe killed in between leaves a segment no header names, which no rundown can find (1 rehearsal in about 10
    # failed so, 2026-11-30).
    dat = BUILD / "db-binding" / "m-native" / "db" / "bcat.dat"
    deadline = time.monotonic() + 60
    while recorded_shmid(dat) not in ipc_ids("-m") - before[0] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert recorded_shmid(dat) in ipc_ids("-m") - before[0], "the probe did not open the database within 60 s"
    return probe, before


def test_a_probe_killed_outright_leaves_nothing_once_the_next_run_starts(tmp_path: Path) -> None:
    probe, before = probe_with_the_database_open()
    os.killpg(probe.pid, signal.SIGKILL)
    probe.wait(timeout=30)
    assert ipc_ids("-m") - before[0]  # what SIGKILL leaves: GT.M could not run down
    done = bridgebench("run", "db-binding", "--benchmarks", "get", "--mechanisms", "m-native", "-p", "1",
                       "-i", "3", "--store", str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path),
                       "--build-dir", str(BUILD), cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (ipc_ids("-m") - before[0], ipc_ids("-s") - before[1]) == (set(), set())


def test_a_probe_the_harness_stops_runs_its_database_down_and_leaves_nothing() -> None:
    """Stopping a benchmark (a timeout, a failed lock-step block, Ctrl-C), the harness sends it SIGTERM first
    and has the launcher kill it only after a grace: GT.M runs its database down on SIGTERM, so nothing is left
    even if no run follows (the test above: what SIGKILL leaves)."""
    launch = launcher()
    assert launch is not None
    probe, before = probe_with_the_database_open(str(launch), "/dev/null")
    ask_to_stop(probe.pid, launched=True)  # as the harness stops a run (runner.execute, stepped.kill)
    assert probe.wait(timeout=60) != 0
    left = ipc_ids("-m") - before[0], ipc_ids("-s") - before[1]
    assert left == (set(), set()), holders(BUILD / "db-binding", left[0])


@pytest.mark.parametrize("vm", sorted(LUA))
def test_a_stepped_probe_waits_through_gtms_timer_signal(test_database: Path, vm: str) -> None:
    """GT.M arms a flush timer after a database write; its signal interrupts the probe's wait for the harness's
    next go (EINTR). The probe waits again instead of reading it as the end of input, which failed a lock-step
    member whenever its next turn came more than a second later. Pauses of 1.5 s between turns, as a block
    with slow partners makes them."""
    lua_cpath = str(BUILD / "db-binding" / f"{LUA[vm]}-cached" / "?.so")
    env = os.environ | {"LUA_CPATH": lua_cpath, "LUA_PATH": str(STUDY / "lua" / "?.lua"), "BB_STYLE": "cached",
                        "BRIDGEBENCH_STEPPED": "1"}
    # Unbuffered: the last answer and the JSON object can come in one read, and a buffered readline would keep
    # the object where communicate() does not look (it reads the pipe itself).
    probe = subprocess.Popen(["bash", str(STUDY / "gtmenv.sh"), str(test_database), vm,
                              str(REPO / "probes" / "lua" / "probe.lua"), str(STUDY / "lua" / "bench.lua"), "3",
                              "set 100"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, bufsize=0)
    assert probe.stdin is not None and probe.stdout is not None
    assert probe.stdout.readline() == b"bridgebench-stepped/1 ready\n"
    for _ in range(3):
        time.sleep(1.5)  # the timer fires within these (it is armed by the first write)
        probe.stdin.write(b"g")
        probe.stdin.flush()
        float(probe.stdout.readline())  # the iteration's seconds
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err.decode()
    assert json.loads(out)["answer"]
