"""The luajit-consistency study: LuaJIT built from Debian's source package in the study's variants (stock,
fixed PRNG seed, 4096 hot counters), reproducibly, or unavailable with the reason when the source cannot be
fetched; the padding that shifts the code does shift it, and nothing else; every mechanism agrees; a pinned
build counts the same instructions in every execution while Debian's does not; and the study's table script
runs on a real campaign. Nothing here depends on the machine's speed."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from bridgebench.build import build_study
from bridgebench.campaign.timing import check
from bridgebench.study import STUDIES_DIR, read_study
from tests.conftest import REPO, bridgebench

STUDY = read_study(STUDIES_DIR / "luajit-consistency" / "study.toml")
SCRIPT = STUDY.dir / "build_luajit.sh"
pytestmark = pytest.mark.skipif(shutil.which("luajit") is None or shutil.which("dpkg-source") is None,
                                reason="needs Debian's luajit and dpkg-dev (scripts/install.sh)")


def _build(shared: Path, variant: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(shared), variant], capture_output=True, text=True,
                          timeout=900, env={**os.environ, **env})


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def build_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build folder whose shared LuaJIT builds hold the patched, pinned variant (the one the tests run)."""
    root = tmp_path_factory.mktemp("build")
    done = _build(root / STUDY.name / "_luajit", "hotcount-fixedseed")
    assert done.returncode == 0, done.stderr
    return root


def test_the_patched_build_is_reproducible_from_the_source_package(build_root: Path, tmp_path: Path) -> None:
    first = build_root / STUDY.name / "_luajit" / "hotcount-fixedseed"
    again = _build(tmp_path / "elsewhere", "hotcount-fixedseed")
    assert again.returncode == 0, again.stderr
    second = tmp_path / "elsewhere" / "hotcount-fixedseed"
    assert _sha(first / "luajit") == _sha(second / "luajit")  # built in another folder: the same bytes
    # The study's patch and flag are in, on Debian's own source.
    assert "#define HOTCOUNT_SIZE\t\t4096" in (first / "tree/src/lj_dispatch.h").read_text()
    assert (first / "VERSION").read_text().startswith("LuaJIT 2.1.0~beta3")
    assert "-DLUAJIT_SECURITY_PRNG=0" in (first / "VERSION").read_text()
    # Built already: a second call returns at once without touching it.
    mtime = (first / "luajit").stat().st_mtime_ns
    assert _build(build_root / STUDY.name / "_luajit", "hotcount-fixedseed").returncode == 0
    assert (first / "luajit").stat().st_mtime_ns == mtime


def test_without_the_source_package_the_builds_are_unavailable_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-archive"
    empty.mkdir()
    done = _build(tmp_path / "shared", "stock", BRIDGEBENCH_DEBIAN_MIRROR=f"file://{empty}")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith(f"could not fetch Debian's luajit source package from file://{empty}")
    monkeypatch.setenv("BRIDGEBENCH_DEBIAN_MIRROR", f"file://{empty}")
    builds = build_study(STUDY, tmp_path / "build", ["stock", "debian"])
    assert builds["debian"].available  # Debian's own binary needs no source
    assert not builds["stock"].available and "could not fetch Debian's luajit source" in builds["stock"].reason
    assert _build(tmp_path / "shared", "nonsense").returncode == 2


def test_the_padding_shifts_the_code_and_a_pinned_process_repeats_its_addresses(build_root: Path) -> None:
    luajit = build_root / STUDY.name / "_luajit" / "hotcount-fixedseed" / "luajit"

    def address(pad: int) -> int:
        done = subprocess.run(["setarch", "-R", str(luajit), "-e", f"BRIDGEBENCH_PAD = string.rep('p', {pad})",
                               "-e", "io.write(tostring(function() end))"], capture_output=True, text=True,
                              timeout=60, check=True)
        return int(done.stdout.split("0x")[1], 16)

    unshifted = address(0)
    assert address(0) == unshifted  # pinned: the same place every time
    shifts = [address(pad) - unshifted for pad in (64, 128, 192)]
    assert 0 < shifts[0] < shifts[1] < shifts[2]  # further for a longer pad
    assert len({s % 256 for s in shifts} | {0}) == 4  # each lands on other hot counters (64 × 4 B of bytecode)


@pytest.fixture(scope="module")
def builds(build_root: Path) -> dict:
    return build_study(STUDY, build_root, ["debian", "debian-noaslr", "hotloop", "hotcount-pinned",
                                           "hotcount-pinned-shift64"])


def test_every_mechanism_built_agrees_on_every_benchmark(builds: dict) -> None:
    assert {m: b.reason for m, b in builds.items() if not b.available} == {}
    rows = check(STUDY, builds, tuple(STUDY.benchmarks), 120)
    assert len(rows) == len(STUDY.benchmarks) * len(builds)
    assert [r for r in rows if r.status != "agrees"] == []


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_pinned_build_counts_alike_in_every_execution_and_the_table_script_runs(build_root: Path,
                                                                                   tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    done = bridgebench("run", "luajit-consistency", "--budget", "instructions", "--benchmarks", "richards",
                       "--mechanisms", "hotcount-pinned,debian", "-p", "3", "-i", "3", "--store", str(store),
                       "--report-dir", str(tmp_path / "results"), "--build-dir", str(build_root), cwd=tmp_path,
                       timeout=900)
    assert done.returncode == 0, done.stderr
    script = REPO / "studies/luajit-consistency/evidence/consistency.py"
    table = subprocess.run([str(REPO / ".venv/bin/python"), str(script), str(store), "1"],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert table.returncode == 0, table.stderr
    assert "| richards |" in table.stdout and "between shifts" in table.stdout
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT e.mechanism, s.data FROM execution e JOIN series s ON s.execution_id = e.id "
                          "WHERE s.name = 'instructions'").fetchall()
    distinct: dict[str, set[bytes]] = {}
    for mechanism, data in rows:
        distinct.setdefault(mechanism, set()).add(bytes(data))
    assert len(rows) == 6
    assert len(distinct["hotcount-pinned"]) == 1  # every iteration of every execution: the same count
    assert len(distinct["debian"]) > 1  # Debian's LuaJIT seeds its PRNG from getrandom
