"""The exports read back: the Go benchmark format by the real `benchstat`, the CSV by the csv module; both
from the synthetic campaign of conftest.make_campaign."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bridgebench.runner import OK
from tests.conftest import analysed

BENCHSTAT_VERSION = "v0.0.0-20260908200009-22c9c6c9d4da"  # golang.org/x/perf; no tagged releases exist
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
    from bridgebench.timing.report.exports import go_bench_text

    series, result = analysed(tmp_path)
    store = series.store
    text = go_bench_text(result, series)
    lines = text.splitlines()
    assert lines[:4] == ["goos: linux", lines[1], "pkg: bridgebench/synthetic", "cpu: Test CPU @ 3.00GHz"]
    assert lines[1].startswith("goarch: ")
    bench_lines = [ln for ln in lines if ln.startswith("Benchmark")]
    ok = [e for e in store.executions(result.campaign.id) if e.status == OK]
    steady_runs = [r for c in result.cells for r in c.per_execution if r.steady_mean is not None]
    assert len(bench_lines) == len(steady_runs) and len(ok) == 11
    assert all(" " not in ln.split("\t")[0] for ln in bench_lines)
    assert any(ln.startswith("Benchmarkn_body/mechanism=lua_jit-8\t") for ln in bench_lines)
    by_line = iter(bench_lines)
    for cell in result.cells:
        for run in cell.per_execution:
            if run.steady_mean is None:
                assert run.kind == "no steady state"
                continue
            fields = next(by_line).split("\t")
            e = next(e for e in ok if e.id == run.execution_id)
            per_call = store.times(e.id) / (e.batch or 1)
            # the analysis's own steady iterations: steady segments without outliers
            steady = [t for t, s in zip(per_call, run.steady_mask(), strict=True) if s]
            assert int(fields[1]) == len(steady) * (e.batch or 1)
            assert float(fields[2].split()[0]) == pytest.approx(np.mean(steady) * 1e9, rel=1e-9)
            if e.mechanism == "cpython":  # the only one with counters
                assert fields[3:] == ["64.000 B/op", "2.000 allocs/op"]
            else:
                assert len(fields) == 3


def test_benchstat_reads_the_go_export(tmp_path: Path) -> None:
    from bridgebench.timing.report.exports import go_bench_text

    tool = benchstat()
    series, result = analysed(tmp_path)
    path = tmp_path / "synthetic.txt"
    path.write_text(go_bench_text(result, series))
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
    from bridgebench.timing.report.exports import CSV_COLUMNS, csv_text

    series, result = analysed(tmp_path, iterations=200)
    store = series.store
    rows = list(csv.DictReader(io.StringIO(csv_text(result, series))))
    cid = result.campaign.id
    ok = [e for e in store.executions(cid) if e.status == OK]
    assert len(rows) == sum(len(store.times(e.id)) for e in ok) == 11 * 200
    assert tuple(rows[0]) == CSV_COLUMNS
    assert {r["study"] for r in rows} == {"synthetic"} and {r["campaign"] for r in rows} == {str(cid)}
    runs = {r.execution_id: r for c in result.cells for r in c.per_execution}
    for e in ok:
        mine = [r for r in rows if (r["benchmark"], r["mechanism"], r["pexec"]) ==
                (e.benchmark, e.mechanism, str(e.pexec + 1))]
        expected = store.times(e.id) / (e.batch or 1)
        assert [int(r["iteration"]) for r in mine] == list(range(1, len(expected) + 1))
        assert np.array_equal(np.array([float(r["seconds"]) for r in mine]), expected)
        run = runs[e.id]
        flags = [int(r["steady"]) for r in mine]
        outliers = [int(r["outlier"]) for r in mine]
        if run.kind is None:
            assert set(flags) == {1}
        elif run.steady_start is None:
            assert set(flags) == {0}
        else:
            assert flags == [0] * run.steady_start + [1] * (len(expected) - run.steady_start)
        assert [i for i, o in enumerate(outliers) if o] == list(run.outliers)
        # what the analysis counts is exactly the rows steady and not outliers
        counted = [float(r["seconds"]) for r in mine if r["steady"] == "1" and r["outlier"] == "0"]
        if run.steady_mean is not None:
            assert np.mean(counted) == pytest.approx(run.steady_mean, rel=1e-12)
    warmed = [r for r in runs.values() if r.kind == "warmup"]
    assert warmed and all(r.steady_start for r in warmed)  # some rows really are flagged 0
    assert any(r.outliers for r in runs.values())  # and some are outliers


def test_csv_escapes_awkward_names(tmp_path: Path) -> None:
    from bridgebench.timing.report.exports import csv_text

    series, result = analysed(tmp_path, benchmarks=('say "hi", twice',), mechanisms=("a", "b"), pexecs=1,
                              iterations=100, crash=False)
    rows = list(csv.reader(io.StringIO(csv_text(result, series))))
    assert len(rows) == 1 + 2 * 100
    assert {r[2] for r in rows[1:]} == {'say "hi", twice'}
    assert all(len(r) == 9 for r in rows)


# --- a counted campaign's exports say instructions, never seconds --------------------------------------
def test_a_counted_campaigns_csv_names_its_column_instructions_and_holds_counts(tmp_path: Path) -> None:
    from bridgebench.timing.report.exports import csv_columns, csv_text

    series, result = analysed(tmp_path, metric="instructions")
    assert result.metric == "instructions"
    rows = list(csv.DictReader(io.StringIO(csv_text(result, series))))
    assert tuple(rows[0]) == csv_columns("instructions") and "seconds" not in rows[0]
    store = series.store
    e = next(e for e in store.executions(result.campaign.id) if e.status == OK and (e.batch or 1) > 1)
    mine = [float(r["instructions"]) for r in rows
            if (r["benchmark"], r["mechanism"], r["pexec"]) == (e.benchmark, e.mechanism, str(e.pexec + 1))]
    counts = store.counter(e.id, "instructions") / e.batch  # per call, as counted: not billions, not seconds
    assert np.allclose(mine, counts, rtol=1e-12) and min(mine) > 1e5


def test_a_counted_campaigns_go_export_is_in_instructions_and_benchstat_reads_it(tmp_path: Path) -> None:
    from bridgebench.timing.report.exports import go_bench_text

    series, result = analysed(tmp_path, metric="instructions")
    text = go_bench_text(result, series)
    lines = [ln for ln in text.splitlines() if ln.startswith("Benchmark")]
    assert lines and all(ln.split("\t")[2].endswith(" instructions/op") for ln in lines)
    assert not any(field.endswith(" ns/op") for ln in lines for field in ln.split("\t"))
    run = result.cells[0].per_execution[0]
    assert f"{run.steady_mean * 1e9:.3f} instructions/op" in lines[0]
    path = tmp_path / "counted.txt"
    path.write_text(text)
    done = subprocess.run([benchstat(), str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "instructions/op" in done.stdout and "sec/op" not in done.stdout, done.stdout
