"""Exports for other tools: the Go benchmark format (for `benchstat`) and one CSV row per iteration.

Both cover the process executions the analysis used (its runs: successful, with the majority answer) and
read everything but the raw times from the analysis result, so they cannot disagree with the report.
Process executions and iterations are numbered from 1. Both say what they hold: a timed campaign's
seconds (ns/op), a counted one's instructions (instructions/op), never counts under a unit of time.
"""

from __future__ import annotations

import csv
import io
import platform
import re
from collections.abc import Iterator

import numpy as np

from bridgebench.instructions import ANALYSED_PER, INSTRUCTIONS
from bridgebench.timing.analysis import Series
from bridgebench.timing.result import Analysis, Cell, Run

_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386",
           "i386": "386", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+:-]+")


def go_name(text: str) -> str:
    """A name part benchstat reads back whole: no spaces, and none of the '/' and '=' it splits on."""
    return _UNSAFE.sub("_", text.strip()).strip("_") or "_"


def _unit(result: Analysis) -> tuple[str, float, str]:
    """The metric's CSV column, the factor from the analysis's unit to the exported one, and its Go unit."""
    if result.metric == INSTRUCTIONS:  # analysed in billions (counting.ANALYSED_PER), exported as counts
        return INSTRUCTIONS, ANALYSED_PER, "instructions/op"
    return "seconds", 1.0, "ns/op"


def _runs(result: Analysis) -> Iterator[tuple[Cell, Run]]:
    for cell in result.cells:
        for run in cell.per_execution:
            yield cell, run


def go_bench_text(result: Analysis, series: Series) -> str:
    """One Go benchmark line per analysed process execution: the mean of the iterations the analysis counts
    as steady (Run.steady_mean: steady segments, outliers left out; every non-outlier when the run was too
    short to classify) in ns/op (counted: instructions/op), over that many calls; B/op and allocs/op when
    the probe reported the counters `bytes_per_op` / `allocs_per_op`, averaged over the same iterations.
    Executions without a steady state have no line: they have no steady performance to compare."""
    campaign = result.campaign
    env = campaign.environment
    arch = str(env.get("arch") or env.get("machine_arch") or platform.machine())
    procs = int(env.get("cpu_count") or 1)
    lines = ["goos: linux", f"goarch: {_GOARCH.get(arch, go_name(arch))}",
             f"pkg: bridgebench/{go_name(campaign.study)}",
             f"cpu: {' '.join(str(env.get('cpu_model') or 'unknown').split())}"]
    _, scale, measured = _unit(result)
    per_op = 1e9 if measured == "ns/op" else scale
    for cell, run in _runs(result):
        if run.steady_mean is None:
            continue
        calls = int(run.steady_mask().sum()) * run.batch
        name = f"Benchmark{go_name(cell.benchmark)}/mechanism={go_name(cell.mechanism)}-{procs}"
        fields = [name, str(calls), f"{run.steady_mean * per_op:.3f} {measured}"]
        for counter, unit in (("bytes_per_op", "B/op"), ("allocs_per_op", "allocs/op")):
            if counter in run.counters:
                fields.append(f"{run.counters[counter]:.3f} {unit}")
        lines.append("\t".join(fields))
    return "\n".join(lines) + "\n"


def csv_columns(metric: str = "seconds") -> tuple[str, ...]:
    """The CSV's columns: the measured one is named for the metric (seconds, or instructions)."""
    return ("study", "campaign", "benchmark", "mechanism", "pexec", "iteration", metric, "steady", "outlier")


CSV_COLUMNS = csv_columns()  # a timed campaign's


def csv_text(result: Analysis, series: Series) -> str:
    """One row per iteration, seconds per call (counted: instructions per call, in a column named so).
    `steady` is 1 inside the execution's steady state (all of it when the run was too short to classify),
    `outlier` is 1 for the iterations the outlier rule left out; the analysis counts the rows with steady 1
    and outlier 0."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    column, scale, _ = _unit(result)
    writer.writerow(csv_columns(column))
    campaign = result.campaign
    for cell, run in _runs(result):
        times = series.times(run)
        steady = np.zeros(run.iterations, dtype=bool)
        for start, end in run.steady_ranges:
            steady[start:end] = True
        outliers = run.outlier_mask()
        for i, value in enumerate((times * scale if scale != 1.0 else times).tolist()):
            writer.writerow((campaign.study, campaign.id, cell.benchmark, cell.mechanism, run.pexec + 1, i + 1,
                             repr(value), int(steady[i]), int(outliers[i])))
    return out.getvalue()
