"""Does a classified cell's steady state hold still? Read from stored adaptive campaigns whose later executions
are short (later_steady: a benchmark's warm-up and L more iterations): their estimate rests on the L iterations
right after the warm-up, where a first execution's rests on everything after it. Where the steady iterations
keep speeding up or slowing down, the two differ, and a ratio depends on how long its processes ran. A
benchmark of the harness's method on this machine (issue #40), not a test; nothing is run.

    .venv/bin/python evidence/steady_drift.py STORE [STORE …] [--later-steady L]

Per benchmark and mechanism, over the first executions (rounds below the budget's process_executions) that
reached a steady state by warming up or were flat, with at least 2·L steady iterations (L: each campaign's
later_steady, or --later-steady) (outliers left out, as
the report's note takes them: stats/drift.py): the mean over them of log(mean of the first L steady iterations
/ mean of the steady iterations after those), as a factor with its 99 % interval over executions (Student's
t), and beside it how far apart the cell's later executions' steady means and its first executions' lie (their
geometric means' ratio: not paired, so the host's drift over the campaign is in it too). Analyses a copy of each
(SQLite) store, so a campaign running into it is left alone.
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from bridgebench.report import fmt
from bridgebench.stats import Estimate
from bridgebench.stats.drift import factors
from bridgebench.stats.executions import over_executions
from bridgebench.store import SECONDS, Store
from bridgebench.timing.analysis import current_analysis, steady_iterations


def drifts(path: Path, given: int | None
           ) -> tuple[dict[tuple[str, str], list[float]], dict[tuple[str, str], list[float]], set[int]]:
    """Per (benchmark, mechanism): each first execution's log(first L steady / the rest), and each campaign's
    log(later executions' geometric mean steady mean / first executions'); and the L's taken (`given`, else each
    campaign's later_steady: a campaign with neither is left out)."""
    within: dict[tuple[str, str], list[float]] = defaultdict(list)
    apart: dict[tuple[str, str], list[float]] = defaultdict(list)
    taken: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="bridgebench-drift-") as scratch:
        copy = Path(scratch) / path.name
        source, target = sqlite3.connect(path), sqlite3.connect(copy)
        source.backup(target)  # with what the running campaign's write-ahead log holds
        source.close()
        target.close()
        store = Store(str(copy), create=False)
        try:
            for campaign in store.campaigns():
                if campaign.state != "done":
                    continue
                result = current_analysis(store, campaign.id)
                later = given or result.campaign.options.get("later_steady")
                if not later:
                    continue
                taken.add(later)
                first = int(result.campaign.options.get("process_executions") or 3)
                for cell in result.cells:
                    key = (cell.benchmark, cell.mechanism)
                    runs = [r for r in cell.per_execution if r.pexec < first]
                    series = store.series([r.execution_id for r in runs], (SECONDS,))
                    steady = [steady_iterations(r, series[(r.execution_id, SECONDS)]) for r in runs
                              if (r.execution_id, SECONDS) in series]
                    found = factors([s for s in steady if s is not None], later)
                    if found:
                        within[key] += [math.log(f) for f in found]
                    means = [(r.pexec < first, r.steady_mean) for r in cell.per_execution if r.steady_mean]
                    before = [m for is_first, m in means if is_first]
                    after = [m for is_first, m in means if not is_first]
                    if before and after and found:
                        apart[key].append(float(np.mean(np.log(after)) - np.mean(np.log(before))))
        finally:
            store.close()
    return within, apart, taken


def shown(e: Estimate | None) -> str:
    """The drift as a report writes a ratio, marked where its interval leaves 1."""
    apart = e is not None and e.low is not None and e.high is not None and (e.low > 1 or e.high < 1)
    return fmt.ratio(e, precise=True) + (" **apart**" if apart else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+")
    ap.add_argument("--later-steady", type=int, default=None, help="L: the later executions' steady iterations "
                    "(default: each campaign's later_steady)")
    args = ap.parse_args()
    within: dict[tuple[str, str], list[float]] = defaultdict(list)
    apart: dict[tuple[str, str], list[float]] = defaultdict(list)
    taken: set[int] = set()
    for name in args.stores:
        path = Path(name)
        if not path.exists():
            print(f"{name}: no such store", file=sys.stderr)
            return 1
        w, a, t = drifts(path, args.later_steady)
        taken |= t
        for k, v in w.items():
            within[k] += v
        for k, v in a.items():
            apart[k] += v
    if not within:
        print("no first execution with a steady state of 2·L iterations or more", file=sys.stderr)
        return 1
    said = "/".join(str(k) for k in sorted(taken))
    print(f"| benchmark | mechanism | first executions | first {said} steady iterations / the rest "
          f"(99 %) | campaigns | later executions' steady mean / first executions' (geometric mean, range) |")
    print("|---|---|---|---|---|---|")
    for (benchmark, mechanism), logs in sorted(within.items()):
        e = over_executions([math.exp(x) for x in logs], confidence=0.99, scale="log", min_executions=3)
        gaps = apart.get((benchmark, mechanism), [])
        gap = (f"×{math.exp(np.mean(gaps)):.3f} ({math.exp(min(gaps)):.3f}–{math.exp(max(gaps)):.3f})"
               if gaps else "—")
        print(f"| {benchmark} | {mechanism} | {len(logs)} | {shown(e)} | {len(gaps)} | {gap} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
