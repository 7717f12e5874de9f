"""The shared-cache reading (shared_cache.py, probes/c/chase.c): the chase is a real one, its buffers follow the
machine's caches, a failed chase is a reading with its reason, and where a load lies between a core's own cache
and memory decides the finding. No assertion depends on how fast the machine or its cache is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridgebench import shared_cache
from bridgebench.shared_cache import CacheReading, Sizes
from tests.conftest import REPO, bridgebench

SMALL = Sizes(16 << 10, 64 << 10, 256 << 10)  # small enough for a test on any machine


def test_the_chase_visits_every_line_in_one_cycle_and_answers_alike_every_time() -> None:
    program = shared_cache.binary()
    runs = [subprocess.run([str(program), "3", str(64 << 10), "1024"], capture_output=True, text=True, check=True)
            for _ in range(2)]
    out = [json.loads(r.stdout) for r in runs]
    assert out[0]["answer"] == out[1]["answer"] and out[0]["answer"].startswith("nodes=1024 ")
    assert len(out[0]["times"]) == 3 and all(t > 0 for t in out[0]["times"])
    # 1024 nodes in one cycle: after a lap of 1024 untimed loads and 3 × 1024 timed ones, the chase is where it began
    assert out[0]["answer"] == "nodes=1024 end=0"


@pytest.mark.parametrize("args", [[], ["3", "64", "10"], ["0", "65536", "10"], ["3", "65536", "0"]])
def test_the_chase_refuses_what_it_cannot_do_with_a_one_line_reason(args: list[str]) -> None:
    done = subprocess.run([str(shared_cache.binary()), *args], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_a_reading_chases_the_three_buffers_on_the_cpu_it_is_given() -> None:
    before = os.sched_getaffinity(0)
    got = shared_cache.read(max(before), SMALL, iterations=shared_cache.SKIPPED + 3)
    assert got.detail == "" and got.sizes == SMALL
    assert all(x is not None and x > 0 for x in (got.own_s, got.shared_s, got.memory_s))
    assert got.spread is not None and got.spread >= 0
    assert os.sched_getaffinity(0) == before


def test_a_chase_that_fails_is_a_reading_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_cache, "binary", lambda: Path("/bin/false"))
    got = shared_cache.read(None, SMALL)
    assert got.held is None and got.detail.startswith("false exited with 1")
    finding = shared_cache.advice(got)
    assert not finding.ok and "not read: false exited with 1" in finding.advice

    def broken() -> Path:
        raise OSError("cc failed: no compiler")
    monkeypatch.setattr(shared_cache, "binary", broken)
    assert "cannot build chase.c: cc failed" in shared_cache.read(None, SMALL).detail


def test_the_buffers_follow_the_caches_sysfs_gives_and_this_vms_where_it_gives_none(tmp_path: Path) -> None:
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                             (3, "Unified", "65536K")]):
        index = tmp_path / f"index{i}"
        index.mkdir()
        for name, value in (("level", str(level)), ("type", kind), ("size", size)):
            (index / name).write_text(value + "\n")
    assert shared_cache.sizes(tmp_path) == Sizes(1 << 20, 16 << 20, 128 << 20)
    assert shared_cache.sizes(tmp_path / "none") == Sizes(512 << 10, 8 << 20, 64 << 20)


@pytest.mark.parametrize(("own", "shared", "memory", "held"), [(5, 20, 180, 160 / 175), (5, 150, 180, 30 / 175),
                                                               (5, 4, 180, 1.0), (5, 200, 180, 0.0),
                                                               (5, 20, 5, None)])
def test_held_is_where_the_shared_load_lies_between_a_cores_cache_and_memory(own: float, shared: float,
                                                                            memory: float, held: float | None) -> None:
    got = CacheReading(SMALL, own * 1e-9, shared * 1e-9, memory * 1e-9).held
    assert got == (None if held is None else pytest.approx(held))


def test_the_finding_warns_when_most_of_the_shared_cache_is_not_ours() -> None:
    free = shared_cache.advice(CacheReading(SMALL, 5e-9, 20e-9, 180e-9, 0.04))
    assert free.ok
    assert "a load 5 ns in 16 KiB, 20 ns in 64 KiB (interquartile range 4 %), 180 ns in 256 KiB" in free.state
    assert "91% of the way from memory" in free.state
    taken = shared_cache.advice(CacheReading(SMALL, 5e-9, 150e-9, 180e-9, 0.3))
    assert not taken.ok and "17% of the way" in taken.state and "lock-step" in taken.advice


def test_doctor_reads_the_shared_cache(tmp_path: Path) -> None:
    done = bridgebench("doctor", "--json", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    finding = next(f for f in json.loads(done.stdout)["findings"] if f["topic"] == "shared cache now (pointer chase)")
    assert finding["state"].startswith("a load ") and "of the way from memory to a core's own cache" in finding["state"]


def test_the_watch_and_the_block_scripts_run_and_refuse_what_they_cannot_do(tmp_path: Path) -> None:
    """evidence/shared_cache_watch.py and shared_cache_block.py, end to end on a probe with fixed times."""
    probe = [sys.executable, str(REPO / "tests" / "fixtures" / "stepped_probe.py"), "good", "8"]
    env = os.environ | {"LEVEL": "0.002"}
    watch = subprocess.run([sys.executable, str(REPO / "evidence" / "shared_cache_watch.py"), "--readings", "1",
                            "--every", "0", "--", *probe], capture_output=True, text=True, cwd=REPO, env=env,
                           timeout=120)
    assert watch.returncode == 0, watch.stderr
    row = watch.stdout.splitlines()[2]
    assert row.count("|") == 7 and row.rstrip(" |").endswith("2 ms"), watch.stdout  # the probe's fixed 2 ms
    block = subprocess.run([sys.executable, str(REPO / "evidence" / "shared_cache_block.py"), "--rounds", "8",
                            "--blocks", "1", "--", *probe], capture_output=True, text=True, cwd=REPO, env=env,
                           timeout=120)
    assert block.returncode == 0, block.stderr
    assert block.stdout.splitlines()[2].startswith("| 1 | ") and "6 rounds a block" in block.stdout, block.stdout
    for script, bad in (("shared_cache_watch.py", ["--readings", "0"]), ("shared_cache_block.py", ["--rounds", "3",
                                                                                                   "--", "x"])):
        done = subprocess.run([sys.executable, str(REPO / "evidence" / script), *bad], capture_output=True,
                              text=True, cwd=REPO, timeout=60)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
