"""`bridgebench selftest`: run the planted-change study and check bridgebench's verdicts against the truth.

Truth, by construction (probes/c/planted.c, studies/selftest/study.toml):
- A and "A again" are the same program: the differ must say *unchanged*.
- "A with 5% more work" does 1.05× the work: the differ must say *worsened*, and the ratio's CI should
  hold 1.05.
- benchmark `warmup` is 1.5× slower for its first 20 iterations: *warmup*; `slowdown` is 1.3× slower from
  iteration 60: *slowdown*; `steady` is *flat*.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bridgebench import campaign as camp
from bridgebench.analysis import analyse
from bridgebench.build import build_study
from bridgebench.compare import compare
from bridgebench.differ import UNCHANGED, WORSENED
from bridgebench.store import Store
from bridgebench.study import STUDIES_DIR, load_study

PLANTED_RATIO = 1.05
PLANTED_CLASS = {"steady": "flat", "warmup": "warmup", "slowdown": "slowdown"}


@dataclass
class Finding:
    repetition: int
    campaign: int
    check: str
    benchmark: str
    expected: str
    found: str
    ok: bool


@dataclass
class SelftestReport:
    findings: list[Finding] = field(default_factory=list)

    def tally(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for f in self.findings:
            good, total = out.get(f.check, (0, 0))
            out[f.check] = (good + f.ok, total + 1)
        return out

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)


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
        expected = PLANTED_CLASS.get(cell["benchmark"])
        if expected is None:
            continue
        kinds = [e["kind"] for e in cell.get("per_execution", [])]
        right = sum(k == expected for k in kinds)
        found.append(Finding(repetition, cid, "planted class found", f"{cell['benchmark']} ({cell['mechanism']})",
                             expected, f"{right}/{len(kinds)} executions ({cell.get('classification')})",
                             bool(kinds) and right == len(kinds)))
    return found


def run_selftest(store: Store, build_root: Path, repetitions: int, budget: str = "default",
                 on_finding: Callable[[Finding], None] | None = None) -> SelftestReport:
    study = load_study(STUDIES_DIR / "selftest" / "study.toml")
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
