"""The db-binding study on a real GT.M (Debian's fis-gtm, installed from the study's Debian list): every
mechanism counts the same nodes, and a campaign leaves no GT.M shared memory or semaphore behind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import REPO, bridgebench


def ipc_ids(kind: str) -> set[str]:
    """Ids of the System V shared memory segments (-m) or semaphore sets (-s) that exist now."""
    out = subprocess.run(["ipcs", kind], capture_output=True, text=True).stdout
    return {line.split()[1] for line in out.splitlines() if line.startswith("0x")}


def test_every_mechanism_counts_the_same_nodes_and_leaves_nothing_behind(tmp_path: Path) -> None:
    before = ipc_ids("-m"), ipc_ids("-s")
    build = str(REPO / "build")  # the study's databases are cached builds
    done = bridgebench("run", "db-binding", "--benchmarks", "traverse-100k", "-p", "1", "-i", "3", "--store",
                       str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path), "--build-dir", build, "--json",
                       cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    available = {m["mechanism"] for m in result["mechanisms"] if m["available"]}
    assert available == {"m-native", "c-callin"}, [m["reason"] for m in result["mechanisms"]]
    assert {(r["benchmark"], r["status"], r["answer"]) for r in result["check"]} == {
        ("traverse-100k", "agrees", "100000 5000050000")}
    assert all(c["executions_ok"] == 1 and c["steady_performance"] for c in result["cells"])
    assert (ipc_ids("-m") - before[0], ipc_ids("-s") - before[1]) == (set(), set())
