"""The db-binding study on a real GT.M (Debian's fis-gtm, installed from the study's Debian list): every
mechanism counts the same nodes, and a campaign leaves no GT.M shared memory or semaphore behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import REPO, bridgebench


def ipc_ids(kind: str) -> set[str]:
    """Ids of the System V shared memory segments (-m) or semaphore sets (-s) that exist now."""
    out = subprocess.run(["ipcs", kind], capture_output=True, text=True).stdout
    return {line.split()[1] for line in out.splitlines() if line.startswith("0x")}


def test_every_mechanism_counts_the_same_nodes_and_leaves_nothing_behind(tmp_path: Path) -> None:
    before = ipc_ids("-m"), ipc_ids("-s")
    build = str(REPO / "build")  # the study's databases are cached builds
    done = bridgebench("run", "db-binding", "--benchmarks", "traverse-10k", "-p", "1", "-i", "3", "--store",
                       str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path), "--build-dir", build, "--json",
                       cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    available = {m["mechanism"] for m in result["mechanisms"] if m["available"]}
    lua = {f"{vm}-{style}" for vm in ("lua54", "luajit") for style in ("naive", "cached", "batched")}
    assert available == {"m-native", "c-callin", "python-ctypes", "go-cgo"} | lua, \
        [m["reason"] for m in result["mechanisms"]]
    assert {(r["benchmark"], r["status"], r["answer"]) for r in result["check"]} == {
        ("traverse-10k", "agrees", "10000 50005000")}
    assert all(c["executions_ok"] == 1 and c["steady_performance"] for c in result["cells"])
    assert (ipc_ids("-m") - before[0], ipc_ids("-s") - before[1]) == (set(), set())


def test_a_probe_killed_outright_leaves_nothing_once_the_next_run_starts(tmp_path: Path) -> None:
    built = bridgebench("build", "db-binding", "--mechanisms", "m-native", "--build-dir", str(REPO / "build"),
                        cwd=REPO, timeout=600)
    assert built.returncode == 0, built.stderr
    before = ipc_ids("-m"), ipc_ids("-s")
    study = REPO / "studies" / "db-binding"
    probe = subprocess.Popen(["bash", str(study / "gtmenv.sh"), str(REPO / "build" / "db-binding" / "m-native"),
                              "sh", "-c", 'exec "$gtm_dist/mumps" -run bbprobe 100000 1000000'],
                             stdout=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not ipc_ids("-m") - before[0] and time.monotonic() < deadline:  # until it has the database open
        time.sleep(0.05)
    os.killpg(probe.pid, signal.SIGKILL)
    probe.wait(timeout=30)
    assert ipc_ids("-m") - before[0]  # what SIGKILL leaves: GT.M could not run down
    done = bridgebench("run", "db-binding", "--benchmarks", "traverse-10k", "--mechanisms", "m-native", "-p", "1",
                       "-i", "3", "--store", str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path),
                       "--build-dir", str(REPO / "build"), cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (ipc_ids("-m") - before[0], ipc_ids("-s") - before[1]) == (set(), set())
