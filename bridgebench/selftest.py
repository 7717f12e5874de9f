"""`bridgebench selftest`: run the planted-change study and check bridgebench's verdicts against the truth.

Truth, by construction (probes/c/planted.c, studies/selftest/study.toml):
- A and "A again" are the same program: the differ must say *unchanged*.
- "A with 5% more work" does 1.05× the work: the differ must say *worsened*, and the ratio's CI should
  hold 1.05.
- benchmark `warmup` is 1.5× slower for its first 20 iterations, `slowdown` 1.3× slower from iteration 60:
  in every process execution the analysis must find a changepoint there (±2 iterations), with the segment
  means on either side in the planted direction and about the planted size (within a third of it).
- the class of each execution (warmup / slowdown / flat for `steady`) is reported, but is information,
  not a check: a shared machine drifts by a few percent within a run, and under the published rules a real
  shift larger than δ after the planted one rightly makes a class "no steady state" or "slowdown".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bridgebench import campaign as camp
from bridgebench.analysis import analyse
from bridgebench.build import build_study
from bridgebench.compare import compare
from bridgebench.differ import UNCHANGED, WORSENED
from bridgebench.store import Store
from bridgebench.study import STUDIES_DIR, load_study

PLANTED_RATIO = 1.05
PLANTED_CLASS = {"steady": "flat", "warmup": "warmup", "slowdown": "slowdown"}
# benchmark: (iteration where the planted change happens, later/earlier segment mean)
PLANTED_PHASE = {"warmup": (20, 1 / 1.5), "slowdown": (60, 1.3)}
PHASE_TOLERANCE = 2
# The last planted phase must be followed by enough iterations for a segment of its own.
MIN_ITERATIONS = max(at for at, _ in PLANTED_PHASE.values()) + 20
INFORMATION = "class as planted (information)"


@dataclass
class Finding:
    repetition: int
    campaign: int
    check: str
    benchmark: str
    expected: str
    found: str
    ok: bool
    counts: bool = True  # False: information only, not part of the verdict


@dataclass
class SelftestReport:
    findings: list[Finding] = field(default_factory=list)

    def tally(self) -> dict[str, tuple[int, int]]:
        """Per check: how many were right, of how many."""
        out: dict[str, tuple[int, int]] = {}
        for f in self.findings:
            good, total = out.get(f.check, (0, 0))
            out[f.check] = (good + f.ok, total + 1)
        return out

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings if f.counts)


def _judge(store: Store, repetition: int, cid: int) -> list[Finding]:
    found: list[Finding] = []
    same, _ = compare(store, cid, "a", cid, "a-again")
    for c in same:
        found.append(Finding(repetition, cid, "A vs A: unchanged", c.benchmark, UNCHANGED, c.verdict,
                             c.verdict == UNCHANGED))
    plus, _ = compare(store, cid, "a", cid, "a-plus5")
    for c in plus:
        found.append(Finding(repetition, cid, "A vs +5% work: worsened", c.benchmark, WORSENED, c.verdict,
                             c.verdict == WORSENED))
        r = c.ratio
        shown = f"{r['value']:.4f} ({r['low']:.4f}–{r['high']:.4f})" if r else "—"
        found.append(Finding(repetition, cid, "ratio CI holds 1.05", c.benchmark, "1.05", shown,
                             bool(r and r["low"] <= PLANTED_RATIO <= r["high"])))
    result = store.analysis(cid) or {}
    for cell in result.get("cells", []):
        where = f"{cell['benchmark']} ({cell['mechanism']})"
        executions = cell.get("per_execution", [])
        if cell["benchmark"] in PLANTED_PHASE:
            at, shift = PLANTED_PHASE[cell["benchmark"]]
            found_at = [e for e in executions if _phase_found(store.times(e["execution_id"]), e, at, shift)]
            found.append(Finding(repetition, cid, "planted phase found", where,
                                 f"changepoint at {at}±{PHASE_TOLERANCE}, ×{shift:.2f}",
                                 f"in {len(found_at)}/{len(executions)} executions",
                                 bool(executions) and len(found_at) == len(executions)))
        expected = PLANTED_CLASS[cell["benchmark"]]
        right = sum(e["kind"] == expected for e in executions)
        found.append(Finding(repetition, cid, INFORMATION, where, expected,
                             f"{right}/{len(executions)} executions ({cell.get('classification')})",
                             bool(executions) and right == len(executions), counts=False))
    return found


def _phase_found(times: np.ndarray, execution: dict, at: int, shift: float) -> bool:
    """A changepoint within PHASE_TOLERANCE of `at`, with the segments on either side in the planted
    direction and within a third of the planted size."""
    bounds = [0, *execution["changepoints"], len(times)]
    for i, cp in enumerate(bounds[1:-1], 1):
        if abs(cp - at) <= PHASE_TOLERANCE:
            before = float(np.median(times[bounds[i - 1]:cp]))
            after = float(np.median(times[cp:bounds[i + 1]]))
            planted = shift - 1
            return abs((after / before - 1) - planted) <= abs(planted) / 3
    return False


def run_selftest(store: Store, build_root: Path, repetitions: int, budget: str = "default",
                 on_finding: Callable[[Finding], None] | None = None) -> SelftestReport:
    study = load_study(STUDIES_DIR / "selftest" / "study.toml")
    if budget in study.budgets and study.budgets[budget].iterations < MIN_ITERATIONS:
        raise camp.CampaignError(f"selftest: budget '{budget}' has {study.budgets[budget].iterations} iterations; "
                                 f"the planted phases need at least {MIN_ITERATIONS}")
    builds = build_study(study, build_root)
    broken = [b for b in builds.values() if not b.available]
    if broken:
        raise camp.CampaignError(f"selftest: cannot build {broken[0].mechanism}: {broken[0].reason}")
    report = SelftestReport()
    for repetition in range(1, repetitions + 1):
        options = camp.options_for(study, budget, None, None, seed=repetition)
        rows = camp.check(study, builds, options.benchmarks, options.timeout_s)
        bad = [r for r in rows if r.status != "agrees"]
        if bad:
            raise camp.CampaignError(f"selftest: answer check failed: {bad[0].benchmark} on {bad[0].mechanism}: "
                                     f"{bad[0].detail}")
        cid = camp.start(store, study, options, builds, rows)
        camp.run_pending(store, study, cid, options, builds)
        store.save_analysis(cid, analyse(store, cid, seed=repetition))
        for finding in _judge(store, repetition, cid):
            report.findings.append(finding)
            if on_finding:
                on_finding(finding)
    return report
