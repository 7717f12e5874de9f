"""The exports read back: the Go benchmark format by the real `benchstat`, the CSV by the csv module.

`make_campaign` builds a small synthetic store (warm-ups, outliers, a batched mechanism, counters, a
crash, an unavailable mechanism); the HTML report's tests use it too."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bridgebench.build import BuildResult
from bridgebench.protocol import ProbeOutput
from bridgebench.runner import CRASHED, OK, Execution, plan
from bridgebench.store import Store

BENCHSTAT_VERSION = "v0.0.0-20260908200009-22c9c6c9d4da"  # golang.org/x/perf; no tagged releases exist
EVIL = "<script>alert('owned')</script>"


def _series(rng: np.random.Generator, kind: str, n: int, level: float) -> np.ndarray:
    """Seconds per iteration with a planted shape and a few outliers."""
    t = rng.normal(level, level * 0.01, n)
    if kind == "warmup":
        t[: n // 5] += level * 0.6
    elif kind == "slowdown":
        t[n // 2:] += level * 0.3
    t[rng.choice(n, size=max(1, n // 100), replace=False)] *= 4
    return np.abs(t)


def make_campaign(path: Path, *, benchmarks: tuple[str, ...] = ("fib", "n body"),
                  mechanisms: tuple[str, ...] = ("cpython", "lua/jit"), pexecs: int = 3,
                  iterations: int = 300, seed: int = 1, crash: bool = True,
                  stop_after: int | None = None) -> tuple[Store, int]:
    """A finished campaign in a new store at `path`: the first mechanism is the baseline and runs batched
    (4 calls per iteration) with allocation counters; the second warms up (and slows down in one
    execution); the last planned execution crashes with an HTML-looking stderr; "gone" is unavailable.
    With stop_after, only that many executions are stored and the campaign is left running."""
    rng = np.random.default_rng(seed)
    store = Store(path)
    mechs = [*mechanisms, "gone"]
    options = {"budget": "default", "process_executions": pexecs, "iterations": iterations, "timeout_s": 60.0,
               "benchmarks": list(benchmarks), "mechanisms": mechs, "randomise": False, "seed": 0}
    config = {"study": {"study": {"name": "synthetic", "baseline": mechanisms[0]}}, "options": options}
    env = {"hostname": "box", "cpu_model": "Test  CPU @ 3.00GHz", "cpu_count": 8, "memory_gib": 16.0,
           "kernel": "6.1.0", "os": "Debian 12", "governor": "performance", "turbo": "off", "aslr": "full",
           "virtualisation": "none detected", "load_average": [0.1, 0.2, 0.3]}
    tasks = plan(list(benchmarks), list(mechanisms), pexecs)
    cid = store.create_campaign("synthetic", "/studies/synthetic/study.toml", "hash", config,
                                "0123456789abcdef", env, "machine-1", tasks)
    builds = {m: BuildResult(m, True, "", f"{m} 1.0", path.parent, f"build-{m}", False) for m in mechanisms}
    builds["gone"] = BuildResult("gone", False, "not found: gone-vm (Debian packages: gone-vm)", "",
                                 path.parent, "", False)
    store.record_builds(cid, builds, {m: m.upper() for m in mechs})
    store.record_check(cid, [(b, m, "agrees", "42", "", 1) for b in benchmarks for m in mechanisms])
    for task in tasks[:stop_after]:
        if crash and task is tasks[-1]:
            run = Execution(CRASHED, "exit status 1: boom", 1, f"Traceback\n{EVIL}\n", None, 1000, 0.0, 0.1)
        else:
            b, m = benchmarks.index(task.benchmark), mechanisms.index(task.mechanism)
            level = 1e-3 * (1 + b) * (1 + 0.5 * m)
            kind = "flat"
            if task.mechanism != mechanisms[0]:
                kind = "slowdown" if task.pexec == 1 and task.benchmark == benchmarks[-1] else "warmup"
            times = _series(rng, kind, iterations, level)
            batch, counters = 1, {}
            if task.mechanism == mechanisms[0]:
                batch = 4
                times = times * batch
                counters = {"bytes_per_op": [64.0] * iterations, "allocs_per_op": [2.0] * iterations}
            out = ProbeOutput([float(x) for x in times], "42", batch, counters, {"vm": task.mechanism})
            run = Execution(OK, "", 0, "", out, 20480, 0.0, float(times.sum()))
        store.record_execution(cid, task, run)
    if stop_after is None:
        store.set_state(cid, "done")
    return store, cid


def analysed(tmp_path: Path, **kwargs: Any) -> tuple[Store, dict[str, Any]]:
    from bridgebench.analysis import analyse

    store, cid = make_campaign(tmp_path / "s.sqlite", **kwargs)
    return store, analyse(store, cid)


# --- benchstat ---------------------------------------------------------------------------------------
def _go_bin_dir() -> Path | None:
    """Where `go install` puts binaries: $GOBIN, else the first $GOPATH's bin."""
    if shutil.which("go") is None:
        return None
    done = subprocess.run(["go", "env", "GOBIN", "GOPATH"], capture_output=True, text=True)
    gobin, gopath = ([*done.stdout.splitlines(), "", ""])[:2]
    if gobin.strip():
        return Path(gobin.strip())
    first = gopath.strip().split(os.pathsep)[0]
    return Path(first) / "bin" if first else None


def benchstat() -> str:
    """The path of benchstat: on PATH, in Go's bin directory, or installed there now (pinned)."""
    beside_python = Path(sys.executable).parent / "benchstat"  # where scripts/install.sh --dev puts it
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("benchstat")
    if found:
        return found
    bin_dir = _go_bin_dir()
    if bin_dir is None:
        pytest.skip("benchstat is not installed and there is no Go toolchain to install it")
    if not (bin_dir / "benchstat").exists():
        done = subprocess.run(["go", "install", f"golang.org/x/perf/cmd/benchstat@{BENCHSTAT_VERSION}"],
                              capture_output=True, text=True, timeout=300,
                              env=os.environ | {"GOFLAGS": "-mod=mod"})
        if done.returncode != 0 or not (bin_dir / "benchstat").exists():
            pytest.skip(f"benchstat is missing and `go install` of it failed: {done.stderr.strip()[-300:]}")
    return str(bin_dir / "benchstat")


def test_go_format_lines_hold_the_steady_mean_of_each_execution(tmp_path: Path) -> None:
    from bridgebench.report.exports import go_bench_text

    store, result = analysed(tmp_path)
    text = go_bench_text(result, store)
    lines = text.splitlines()
    assert lines[:4] == ["goos: linux", lines[1], "pkg: bridgebench/synthetic", "cpu: Test CPU @ 3.00GHz"]
    assert lines[1].startswith("goarch: ")
    bench_lines = [ln for ln in lines if ln.startswith("Benchmark")]
    ok = [e for e in store.executions(result["campaign"]["id"]) if e.status == OK]
    assert len(bench_lines) == len(ok) == 11
    assert all(" " not in ln.split("\t")[0] for ln in bench_lines)
    assert any(ln.startswith("Benchmarkn_body/mechanism=lua_jit-8\t") for ln in bench_lines)
    runs = {r["execution_id"]: r for c in result["cells"] for r in c["per_execution"]}
    by_line = iter(bench_lines)
    for cell in result["cells"]:
        for run in cell["per_execution"]:
            fields = next(by_line).split("\t")
            e = next(e for e in ok if e.id == run["execution_id"])
            per_call = store.times(e.id) / (e.batch or 1)
            steady = per_call[run["steady_start"] or 0:]
            assert int(fields[1]) == len(steady) * (e.batch or 1)
            assert float(fields[2].split()[0]) == pytest.approx(steady.mean() * 1e9, rel=1e-6)
            if e.mechanism == "cpython":  # the only one with counters
                assert fields[3:] == ["64.000 B/op", "2.000 allocs/op"]
            else:
                assert len(fields) == 3
    assert len(runs) == len(bench_lines)


def test_benchstat_reads_the_go_export(tmp_path: Path) -> None:
    from bridgebench.report.exports import go_bench_text

    tool = benchstat()
    store, result = analysed(tmp_path)
    path = tmp_path / "synthetic.txt"
    path.write_text(go_bench_text(result, store))
    done = subprocess.run([tool, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "parsing" not in done.stderr and "syntax" not in done.stderr.lower(), done.stderr
    for name in ("fib/mechanism=cpython", "fib/mechanism=lua_jit", "n_body/mechanism=cpython",
                 "n_body/mechanism=lua_jit"):
        assert name in done.stdout, done.stdout
    assert "sec/op" in done.stdout and "B/op" in done.stdout and "allocs/op" in done.stdout
    # Mechanisms side by side, as a user would compare them.
    by_mech = subprocess.run([tool, "-col", "/mechanism", str(path)], capture_output=True, text=True,
                             timeout=60)
    assert by_mech.returncode == 0, by_mech.stderr
    assert "cpython" in by_mech.stdout and "lua_jit" in by_mech.stdout
    assert "vs base" in by_mech.stdout


# --- CSV ---------------------------------------------------------------------------------------------
def test_csv_has_one_row_per_iteration_with_the_stored_values(tmp_path: Path) -> None:
    from bridgebench.report.exports import CSV_COLUMNS, csv_text

    store, result = analysed(tmp_path, iterations=200)
    rows = list(csv.DictReader(io.StringIO(csv_text(result, store))))
    cid = result["campaign"]["id"]
    ok = [e for e in store.executions(cid) if e.status == OK]
    assert len(rows) == sum(len(store.times(e.id)) for e in ok) == 11 * 200
    assert tuple(rows[0]) == CSV_COLUMNS
    assert {r["study"] for r in rows} == {"synthetic"} and {r["campaign"] for r in rows} == {str(cid)}
    runs = {r["execution_id"]: r for c in result["cells"] for r in c["per_execution"]}
    for e in ok:
        mine = [r for r in rows if (r["benchmark"], r["mechanism"], r["pexec"]) ==
                (e.benchmark, e.mechanism, str(e.pexec + 1))]
        expected = store.times(e.id) / (e.batch or 1)
        assert [int(r["iteration"]) for r in mine] == list(range(1, len(expected) + 1))
        assert np.array_equal(np.array([float(r["seconds"]) for r in mine]), expected)
        run = runs[e.id]
        flags = [int(r["steady"]) for r in mine]
        if run["kind"] is None:
            assert set(flags) == {1}
        elif run["steady_start"] is None:
            assert set(flags) == {0}
        else:
            assert flags == [0] * run["steady_start"] + [1] * (len(expected) - run["steady_start"])
    warmed = [r for r in runs.values() if r["kind"] == "warmup"]
    assert warmed and all(r["steady_start"] for r in warmed)  # some rows really are flagged 0


def test_csv_escapes_awkward_names(tmp_path: Path) -> None:
    from bridgebench.report.exports import csv_text

    store, result = analysed(tmp_path, benchmarks=('say "hi", twice',), mechanisms=("a", "b"), pexecs=1,
                             iterations=100, crash=False)
    rows = list(csv.reader(io.StringIO(csv_text(result, store))))
    assert len(rows) == 1 + 2 * 100
    assert {r[2] for r in rows[1:]} == {'say "hi", twice'}
    assert all(len(r) == 8 for r in rows)
