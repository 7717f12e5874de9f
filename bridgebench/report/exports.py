"""Exports for other tools: the Go benchmark format (for `benchstat`) and one CSV row per iteration.

Both cover the process executions the analysis used (its `per_execution` entries: successful, with the
majority answer) and give seconds per call, dividing by the batch as the analysis does. Process
executions and iterations are numbered from 1.
"""

from __future__ import annotations

import csv
import io
import platform
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from bridgebench.store import Store, StoredExecution

_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386",
           "i386": "386", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+:-]+")


def go_name(text: str) -> str:
    """A name part benchstat reads back whole: no spaces, and none of the '/' and '=' it splits on."""
    return _UNSAFE.sub("_", text.strip()).strip("_") or "_"


Run = tuple[dict[str, Any], dict[str, Any], StoredExecution, np.ndarray]


def _runs(result: dict[str, Any], store: Store) -> Iterator[Run]:
    """(cell, per_execution entry, stored execution, seconds per call) for every execution analysed."""
    stored = {e.id: e for e in store.executions(result["campaign"]["id"])}
    for cell in result.get("cells", []):
        for run in cell.get("per_execution") or []:
            e = stored.get(run.get("execution_id", -1))
            if e is None:
                continue
            times = store.times(e.id)
            if e.batch and e.batch > 1:
                times = times / e.batch
            yield cell, run, e, times


def _steady_from(run: dict[str, Any], n: int) -> int:
    start = run.get("steady_start")
    return int(start) if start is not None and 0 <= int(start) < n else 0


def go_bench_text(result: dict[str, Any], store: Store) -> str:
    """One Go benchmark line per analysed process execution: the mean of its steady iterations (all of
    them when it has no steady start) in ns/op, over that many calls; B/op and allocs/op when the probe
    reported the counters `bytes_per_op` / `allocs_per_op` (taken as per call, averaged the same way)."""
    campaign = result["campaign"]
    env = campaign.get("environment") or {}
    arch = str(env.get("arch") or env.get("machine_arch") or platform.machine())
    procs = int(env.get("cpu_count") or 1)
    lines = ["goos: linux", f"goarch: {_GOARCH.get(arch, go_name(arch))}",
             f"pkg: bridgebench/{go_name(campaign['study'])}",
             f"cpu: {' '.join(str(env.get('cpu_model') or 'unknown').split())}"]
    for cell, run, e, times in _runs(result, store):
        if len(times) == 0:
            continue
        start = _steady_from(run, len(times))
        steady = times[start:]
        calls = len(steady) * (e.batch or 1)
        name = f"Benchmark{go_name(cell['benchmark'])}/mechanism={go_name(cell['mechanism'])}-{procs}"
        fields = [name, str(calls), f"{float(np.mean(steady)) * 1e9:.3f} ns/op"]
        for counter, unit in (("bytes_per_op", "B/op"), ("allocs_per_op", "allocs/op")):
            values = store.counter(e.id, counter)
            if len(values) == len(times):
                fields.append(f"{float(np.mean(values[start:])):.3f} {unit}")
        lines.append("\t".join(fields))
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ("study", "campaign", "benchmark", "mechanism", "pexec", "iteration", "seconds", "steady")


def csv_text(result: dict[str, Any], store: Store) -> str:
    """One row per iteration. `steady` is 1 for the iterations from the execution's steady start on, 0 before
    it and for every iteration of an execution without a steady state; 1 throughout when the run was too
    short to classify (the analysis then treats it all as steady)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    campaign = result["campaign"]
    for cell, run, e, times in _runs(result, store):
        if run.get("kind") is None:
            start = 0
        elif run.get("steady_start") is None:
            start = len(times)
        else:
            start = int(run["steady_start"])
        for i, seconds in enumerate(times.tolist()):
            writer.writerow((campaign["study"], campaign["id"], cell["benchmark"], cell["mechanism"],
                             e.pexec + 1, i + 1, repr(seconds), int(i >= start)))
    return out.getvalue()
