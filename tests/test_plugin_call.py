"""plugin-call through the harness: the seed's unfetchable mechanisms are reported unavailable with the
module proxy's reason, never dropped; the available ones agree on the contract."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path

import pytest

from bridgebench.build import build_study
from bridgebench.campaign.timing import command_for
from bridgebench.runner import CRASHED, execute
from bridgebench.study import STUDIES_DIR, read_study
from tests.conftest import bridgebench


@pytest.mark.skipif(shutil.which("go") is None and not Path(".venv/bin/go").exists(), reason="no Go toolchain")
def test_unfetchable_mechanisms_are_listed_with_the_reason(tmp_path: Path) -> None:
    result = bridgebench("build", "plugin-call", "--mechanisms", "direct,pie,goloader", "--json", cwd=tmp_path,
                         timeout=600)
    assert result.returncode == 0, result.stderr
    builds = {b["mechanism"]: b for b in json.loads(result.stdout)}
    assert builds["direct"]["available"]
    for name in ("pie", "goloader"):
        assert not builds[name]["available"]
        assert "Go module proxy does not serve" in builds[name]["reason"] or "can be fetched now" in \
            builds[name]["reason"]


@pytest.mark.skipif(shutil.which("luajit") is None, reason="luajit is not installed")
def test_luajit_ffi_into_go_agrees_with_the_go_mechanisms(tmp_path: Path) -> None:
    result = bridgebench("check", "plugin-call", "--mechanisms", "direct,cgo,luajit-ffi", "--benchmarks",
                         "int,bytes-64", "--json", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {r["status"] for r in rows} == {"agrees"}
    assert {r["batch"] for r in rows if r["mechanism"] == "luajit-ffi"} == {10000}  # the FFI benchmark's batch


def _pids_of(executable: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if Path(proc / "exe").resolve() == executable.resolve():
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


SERVING_CPU_S = 0.3  # a go-plugin server's start and handshake take a few tens of milliseconds of CPU


def _cpu_s(pid: int) -> float:
    """The process's user and system CPU time so far (/proc/PID/stat); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15


@pytest.mark.skipif(shutil.which("go") is None and not Path(".venv/bin/go").exists(), reason="no Go toolchain")
def test_a_plugin_process_killed_mid_run_is_a_failed_execution(tmp_path: Path) -> None:
    study = read_study(STUDIES_DIR / "plugin-call" / "study.toml")
    build = build_study(study, tmp_path / "build", ["hcrpc"])["hcrpc"]
    assert build.available, build.reason
    server = build.build_dir / "hcplugin"
    # 50000 × 8 RPC calls: seconds of the server's CPU time, far more than the killer waits for; killed, the run
    # ends at once, so the size costs nothing.
    argv, env = command_for(study, build, "int", "int", 50000, 8)
    # Where the killed server's socket would stay. Short: go-plugin's unix socket lives below it (inside the
    # launcher's own folder), and a path past the 108 bytes of sun_path fails at setup, not mid-run.
    temporary = Path(tempfile.mkdtemp(prefix="bb-", dir="/tmp"))
    env = {**env, "TMPDIR": str(temporary)}
    ended, killed = threading.Event(), []

    def kill_the_plugin() -> None:
        # Once the server has done work that its start and handshake never take (CPU time, not a wait: a slow
        # machine only takes longer to get there), the timed loop is under way.
        while not ended.is_set():
            pids = [pid for pid in _pids_of(server) if _cpu_s(pid) >= SERVING_CPU_S]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            if pids:
                return
            ended.wait(0.05)

    killer = threading.Thread(target=kill_the_plugin)
    killer.start()
    try:
        run = execute(argv, env, study.dir, 50000, 120)
    finally:
        ended.set()
        killer.join()
        leftovers = list(temporary.iterdir())
        shutil.rmtree(temporary)
    assert killed, (run.status, run.detail)  # the server ran, and was killed while the run went on
    assert run.status == CRASHED, (run.status, run.detail)
    assert re.search(r"call \d+ of iteration \d+ failed", run.detail), run.detail  # mid-run, not at setup
    assert run.output is None  # no times were kept as if fast
    assert not _pids_of(server)  # nothing left behind
    assert leftovers == []  # nor its socket: the execution's private TMPDIR went with it
