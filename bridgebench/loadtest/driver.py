"""Runs the load driver (driver/, a Go command): built on first use into the cache folder, keyed by its
sources and the Go toolchain, with the Go that scripts/install.sh put beside the venv's python first on PATH."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bridgebench import audit
from bridgebench.loadtest.server import Server
from bridgebench.native import build_atomically, cache_dir

SOURCE = Path(__file__).with_name("driver")
PROTOCOL = "bridgebench-load/1"


class DriverError(Exception):
    """The driver could not be built, or a run failed; one line."""


def _env() -> dict[str, str]:
    return dict(os.environ) | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


@functools.cache
def binary() -> Path:
    """The built driver, building it if the cache does not hold this version yet (looked up once a process)."""
    env = _env()
    try:
        version = subprocess.run(["go", "version"], capture_output=True, text=True, env=env, timeout=60,
                                 check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise DriverError(f"the load driver needs Go (scripts/install.sh installs it): {e}") from e
    digest = hashlib.sha256(version.encode())
    for path in sorted(SOURCE.iterdir()):
        if path.suffix in (".go", ".mod", ".sum") and not path.name.endswith("_test.go"):
            digest.update(path.name.encode() + path.read_bytes())
    target = cache_dir() / f"loaddriver-{digest.hexdigest()[:20]}"
    if target.exists():
        return target
    try:
        build_atomically(target, lambda out: ["go", "build", "-o", str(out), "."], cwd=SOURCE, env=env,
                         timeout_s=600)
    except (OSError, subprocess.SubprocessError) as e:
        raise DriverError(f"the load driver could not be built: {e}") from e
    return target


def _result(done: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    if done.returncode != 0:
        raise DriverError(f"{what}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}")
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise DriverError(f"{what}: not JSON: {done.stdout[:200]!r}") from e
    if not isinstance(result, dict) or result.get("protocol") != PROTOCOL:
        raise DriverError(f"{what}: not a {PROTOCOL} result")
    return result


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(spec: Path, server: Server, *, rate: float, connections: int, warmup_s: float, duration_s: float,
        prefix: tuple[str, ...] = (), env: dict[str, str] | None = None) -> dict[str, Any]:
    """One load run against a started server: constant rate (rate > 0) or closed loop (rate 0). `prefix`
    goes before the driver's command (`taskset -c 1` pins it to a core) and `env` is its environment. The
    result carries the disturbance audit of the run under "machine": what the rest of the machine used while
    the driver and the server ran (their own CPU is left out)."""
    argv = [*prefix, str(binary()), "run", "-spec", str(spec), "-addr", f"127.0.0.1:{server.port}", "-rate",
            repr(float(rate)), "-connections", str(connections), "-warmup", f"{warmup_s}s", "-duration",
            f"{duration_s}s"]
    bound_s = warmup_s + duration_s + 60  # the driver ends itself at warmup + duration; the rest is margin
    before, server_before, driver_before, t0 = audit.sample(), server.cpu_s(), _children_cpu_s(), time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=bound_s, check=False, env=env)
    except subprocess.TimeoutExpired as e:
        raise DriverError(f"the load driver did not end {bound_s:g} s after it started") from e
    wall_s, after = time.monotonic() - t0, audit.sample()
    server_s = server.cpu_s() - server_before
    own_s = _children_cpu_s() - driver_before + server_s
    result = _result(done, "load run")
    result["server_cpu_s"] = server_s  # the server's own CPU over the run, warm-up included
    result["machine"] = _audit(before, after, wall_s, own_s)
    return result


def _audit(before: audit.Sample | None, after: audit.Sample | None, wall_s: float, own_s: float
           ) -> dict[str, Any] | None:
    """The audit over a load run, its own CPU (driver and server) left out of others."""
    checked = audit.audit(before, after, wall_s, None, own_cpu_s=own_s) if wall_s > 0 else None
    if checked is None:
        return None
    return {"wall_s": wall_s, "own_cpu_s": own_s, "others_cores": checked.others_cpu_s / wall_s,
            "steal_cores": checked.steal_s / wall_s, "load1": checked.load1, "disturbed": checked.disturbed}


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The process executions of one rate as one: counts added, histograms merged."""
    with tempfile.TemporaryDirectory(prefix="bridgebench-load-") as work:
        files = []
        for n, result in enumerate(results):
            path = Path(work) / f"{n}.json"
            path.write_text(json.dumps(result))
            files.append(str(path))
        done = subprocess.run([str(binary()), "merge", *files], capture_output=True, text=True, timeout=120,
                              check=False)
    return _result(done, "merge")
