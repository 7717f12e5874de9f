"""`bridgebench selftest`: run the planted-change study and check bridgebench's verdicts against the truth.

Truth, by construction (probes/c/planted.c, studies/selftest/study.toml):
- A and "A again" are the same program: the differ must claim no difference (*equivalent* or *undecided*).
- "A with 5% more work" and "A with 2% more work" do 1.05× and 1.02× the work: the differ should say
  *slower*, and the ratio's CI should hold 1.05 (1.02), on the benchmarks that have a steady state by
  construction (`nosteady` has none to compare). +2 % is issue #22's goal for the differ's power.
- "A in modes" draws, per process, whether it does 1.06× A's work or 1× (at even odds, for its whole
  life, as LuaJIT's speed modes are drawn per process): its ratio to A over processes is the geometric
  mean, √1.06 ≈ 1.0296, and the ratio's CI should hold it at its nominal rate (`--budget modes`; issue
  #40's planted process modes).
- "A with a late step" is 1.3× slower from iteration 105 of 120 in every process, whatever the benchmark: it
  has no steady state where A has one, and the differ should say *different* (`--budget late`: the power of
  its rule for a steady state on one side only, methodology §6).
- benchmark `steady` has no phase (class *flat*); `warmup` is 1.5× slower for its first 20 iterations
  (*warmup*); `slowdown` 1.3× slower from iteration 60 (*slowdown*); `nosteady` 1.3× slower from
  iteration 105 of 120, inside the last quarter (*no steady state*). In every process execution the
  analysis should find a changepoint at a planted phase (±2 iterations), with the segment means on either
  side in the planted direction and about the planted size (within a third of it), and the class planted.

Every check is judged per unit (a comparison of two cells, or one process execution), and each unit is
*quiet* or *disturbed* (the audit flagged one of its executions). A check passes when its quiet units are
right at least as often as its target, and fails when they fall short of it beyond chance; disturbed
units are reported apart, as right or wrong-but-flagged: a wrong verdict on a disturbed machine is
flagged, never silent. When too few units are quiet, or too few to tell a shortfall from chance, the
self-test says it is inconclusive, instead of failing on the machine's noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bridgebench.campaign import lifecycle, timing
from bridgebench.campaign.kind import CampaignError
from bridgebench.campaign.kinds import TIMING
from bridgebench.instructions import INSTRUCTIONS
from bridgebench.options import read
from bridgebench.question import SLOWER
from bridgebench.stats.executions import MIN_EXECUTIONS
from bridgebench.store import Store
from bridgebench.study import STUDIES_DIR, read_study
from bridgebench.timing.analysis import Series, analyse, current_analysis
from bridgebench.timing.diff_rules import CLAIMS, DIFFERENT, Comparison
from bridgebench.timing.diff_sides import compare
from bridgebench.timing.report.tables import delta_words

# mechanism: the work it does, relative to A (the study's PLANTED_SCALE)
PLANTED_WORK = {"a-plus5": 1.05, "a-plus2": 1.02, "a-plus05": 1.005}
PLANTED_RATIO = PLANTED_WORK["a-plus5"]
MODES_MECHANISM, MODE_FACTOR = "a-modes", 1.06  # the study's PLANTED_MODE: each process 1× or 1.06× at even odds
MODES_TRUTH = MODE_FACTOR ** 0.5  # the mean of the per-process log ratios, as a ratio
PLANTED_CLASS = {"steady": "flat", "warmup": "warmup", "slowdown": "slowdown", "nosteady": "no steady state"}
# benchmark: (iteration where the planted change happens, later/earlier segment mean)
PLANTED_PHASE = {"warmup": (20, 1 / 1.5), "slowdown": (60, 1.3), "nosteady": (105, 1.3)}
LATE_MECHANISM, LATE_PHASE = "a-late", (105, 1.3)  # the study's PLANTED_LATE, on every benchmark
PHASE_TOLERANCE = 2
# Benchmarks with a steady state by construction: only they can have a performance verdict or a ratio.
COMPARABLE = ("steady", "warmup", "slowdown")
# The last planted phase must be followed by enough iterations for a segment of its own.
MIN_ITERATIONS = max(at for at, _ in PLANTED_PHASE.values()) + 15

A_VS_A = "A vs A: no difference claimed"
PLUS5 = "A vs +5% work: slower"
RATIO = "ratio CI holds 1.05"
PLUS2 = "A vs +2% work: slower"
RATIO2 = "ratio CI holds 1.02"
PLUS05 = "A vs +0.5% work: slower"  # counted campaigns only (budget 'instructions'): time cannot see it here
RATIO05 = "ratio CI holds 1.005"
# mechanism: (its differ check, its ratio check)
PLANTED_CHECKS = {"a-plus5": (PLUS5, RATIO), "a-plus2": (PLUS2, RATIO2), "a-plus05": (PLUS05, RATIO05)}
MODES = "ratio CI holds the modes' mean 1.0296"
LATE = "A vs no steady state: different"
PHASE = "planted phase found"
CLASS = "class as planted"
# Share of quiet units that must be right. A vs A: a false "changed" at most 1% of the time. The others
# are the goals for a quiet machine (the +5% and ratio checks are the differ's power and the
# bootstrap's coverage at a small budget, not guarantees).
TARGETS = {MODES: 0.99, LATE: 0.90, A_VS_A: 0.99, PLUS5: 0.90, RATIO: 0.90, PLUS2: 0.90, RATIO2: 0.90, PLUS05: 1.0,
           RATIO05: 0.90, PHASE: 0.90, CLASS: 0.90}
MIN_QUIET_SHARE = 0.5  # below this share of quiet units, a check's result means nothing here
SIGNIFICANCE = 0.01  # a check fails only when its quiet units fall short of the target beyond chance
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
COUNT_SLACK = 0.001  # counted ratios: the planted work's ratio to within 0.1 % (the loop's fixed instructions)


@dataclass
class Finding:
    repetition: int
    campaign: int
    check: str
    subject: str  # the benchmark (a comparison) or benchmark, mechanism and process execution
    expected: str
    found: str
    ok: bool
    disturbed: bool = False  # the audit flagged an execution this verdict rests on
    undecided: bool = False  # no verdict: too few process executions for an interval (counted apart)


@dataclass(frozen=True)
class Tally:
    check: str
    target: float
    quiet_right: int
    quiet: int
    disturbed_right: int
    disturbed: int
    undecided: int = 0  # units with no verdict (too few process executions for an interval): not judged

    @property
    def units(self) -> int:
        return self.quiet + self.disturbed + self.undecided

    @property
    def too_few_quiet(self) -> bool:
        """Too few quiet decided units to judge: disturbed and undecided ones are not judged."""
        return self.units == 0 or self.quiet < MIN_QUIET_SHARE * self.units

    @property
    def p_short(self) -> float:
        """The chance of this few right or fewer were the quiet units right at the target's rate (one-sided
        exact binomial); 1 when they meet it."""
        if self.quiet_right >= self.target * self.quiet:
            return 1.0
        from scipy.stats import binom  # scipy is imported when used: it costs the CLI ~0.8 s to start

        return float(binom.cdf(self.quiet_right, self.quiet, self.target))

    @property
    def verdict(self) -> str:
        """pass: the quiet units meet the target; fail: they fall short of it beyond chance (p_short below
        1%); inconclusive: short of it by no more than chance allows at this many units, or too few quiet
        decided units to judge."""
        if self.too_few_quiet:
            return INCONCLUSIVE
        p = self.p_short
        return PASS if p == 1.0 else FAIL if p < SIGNIFICANCE else INCONCLUSIVE

    @property
    def why(self) -> str | None:
        """Why an inconclusive check is so, in words (None for the others): the two causes call for different
        remedies (a quieter machine, or more repetitions)."""
        if self.verdict != INCONCLUSIVE:
            return None
        if self.too_few_quiet:
            return (f"{self.quiet} of its {self.units} units were quiet and "
                    f"decided, fewer than {MIN_QUIET_SHARE:.0%}: the machine was too disturbed, or the budget too "
                    "short, to judge it")
        return (f"{self.quiet_right} of {self.quiet} quiet units right ({self.quiet_right / self.quiet:.1%}), short "
                f"of {self.target:.0%} by no more than chance allows at this many (p = {self.p_short:.2f}): more "
                "repetitions (-n) tell a shortfall from chance")


@dataclass
class SelftestReport:
    findings: list[Finding] = field(default_factory=list)
    deltas: set[str] = field(default_factory=set)  # the δ each campaign's classes were judged with, in words

    def tallies(self) -> list[Tally]:
        out = []
        for check, target in TARGETS.items():
            mine = [f for f in self.findings if f.check == check]
            if not mine:  # not planted in these campaigns (+0.5 % is counted only)
                continue
            decided = [f for f in mine if not f.undecided]
            quiet = [f for f in decided if not f.disturbed]
            loud = [f for f in decided if f.disturbed]
            out.append(Tally(check, target, sum(f.ok for f in quiet), len(quiet), sum(f.ok for f in loud),
                             len(loud), len(mine) - len(decided)))
        return out

    @property
    def verdict(self) -> str:
        verdicts = {t.verdict for t in self.tallies()}
        return FAIL if FAIL in verdicts else INCONCLUSIVE if INCONCLUSIVE in verdicts else PASS


def _holds(repetition: int, cid: int, check: str, c: Comparison, truth: float, slack: float, expected: str,
           noisy: bool) -> Finding:
    """Whether the comparison's ratio interval holds the planted truth (to within `slack`, for counts)."""
    r = c.ratio
    shown = ("—" if r is None else f"{r.value:.4f} (no interval: {r.method})" if not r.has_interval
             else f"{r.value:.4f} ({r.low:.4f}–{r.high:.4f})")
    held = bool(r and r.has_interval and r.low <= truth * (1 + slack)  # type: ignore[operator]
                and r.high >= truth * (1 - slack))  # type: ignore[operator]
    return Finding(repetition, cid, check, c.benchmark, expected, shown, held, noisy,
                   r is not None and not r.has_interval)


def _disturbed_executions(store: Store, cid: int) -> set[tuple[str, str]]:
    return {(e.benchmark, e.mechanism) for e in store.executions(cid) if e.disturbed}


def _judge(store: Store, repetition: int, cid: int) -> list[Finding]:
    found: list[Finding] = []
    loud = _disturbed_executions(store, cid)

    def disturbed(bench: str, *mechanisms: str) -> bool:
        return any((bench, m) in loud for m in mechanisms)

    mechanisms = {t.mechanism for t in store.planned(cid)}
    if "a-again" in mechanisms:  # the modes budget runs A and A in modes only
        same, _ = compare(store, cid, "a", cid, "a-again")
        for c in same:
            found.append(Finding(repetition, cid, A_VS_A, c.benchmark, "equivalent or undecided", c.verdict,
                                 c.verdict not in CLAIMS, disturbed(c.benchmark, "a", "a-again"), c.too_few))
    result = current_analysis(store, cid)
    # Counted, a ratio is exact, and it is the ratio of the work plus the loop's few fixed instructions
    # around it (the clock's reads inside the brackets): it must hold the planted ratio to within those.
    slack = COUNT_SLACK if result.metric == INSTRUCTIONS else 0.0
    for mechanism, (worse, holds) in PLANTED_CHECKS.items():
        if mechanism not in mechanisms:  # a campaign stored before the +2 % twin was planted
            continue
        truth = PLANTED_WORK[mechanism]
        plus, _ = compare(store, cid, "a", cid, mechanism)
        for c in (c for c in plus if c.benchmark in COMPARABLE):
            noisy = disturbed(c.benchmark, "a", mechanism)
            found.append(Finding(repetition, cid, worse, c.benchmark, SLOWER, c.verdict, c.verdict == SLOWER,
                                 noisy, c.too_few))
            expected = f"{truth:g}" + (f" ±{slack:.1%}" if slack else "")
            found.append(_holds(repetition, cid, holds, c, truth, slack, expected, noisy))
    if MODES_MECHANISM in mechanisms:  # coverage under process modes: the interval, not a verdict
        modes, _ = compare(store, cid, "a", cid, MODES_MECHANISM)
        for c in (c for c in modes if c.benchmark in COMPARABLE):
            found.append(_holds(repetition, cid, MODES, c, MODES_TRUTH, 0.0, f"{MODES_TRUTH:.4f}",
                                disturbed(c.benchmark, "a", MODES_MECHANISM)))
    if LATE_MECHANISM in mechanisms:  # power of the rule for a steady state on one side only
        late, _ = compare(store, cid, "a", cid, LATE_MECHANISM)
        for c in (c for c in late if c.benchmark in COMPARABLE):
            # A miss for too few executions is a miss here: it comes from a late-step process read as steady.
            found.append(Finding(repetition, cid, LATE, c.benchmark, DIFFERENT, c.verdict, c.verdict == DIFFERENT,
                                 disturbed(c.benchmark, "a", LATE_MECHANISM)))
    series = Series(store, result.metric)
    for cell in result.cells:
        bench = cell.benchmark
        planted = planted_class(bench, cell.mechanism)
        for run in cell.per_execution:
            where = f"{bench} ({cell.mechanism}, process execution {run.pexec + 1})"
            noisy = bool(run.disturbed)
            phase = planted_phase(bench, cell.mechanism)
            if phase is not None:
                at, shift = phase
                ok = _phase_found(series.times(run), run.changepoints, at, shift)
                found.append(Finding(repetition, cid, PHASE, where, f"changepoint at {at}±{PHASE_TOLERANCE}, "
                                     f"×{shift:.2f}", f"changepoints {list(run.changepoints)}", ok, noisy))
            found.append(Finding(repetition, cid, CLASS, where, planted, str(run.kind), run.kind == planted, noisy))
    return found


def planted_class(benchmark: str, mechanism: str) -> str:
    """The class planted in a process execution: its benchmark's, or *no steady state* with a late step."""
    return PLANTED_CLASS["nosteady"] if mechanism == LATE_MECHANISM else PLANTED_CLASS[benchmark]


def planted_phase(benchmark: str, mechanism: str) -> tuple[int, float] | None:
    """The planted phase a process execution's changepoints are checked against: its benchmark's, where it has
    one (a late step does not remove it), else the late step; on `nosteady` the two steps fall together."""
    own = PLANTED_PHASE.get(benchmark)
    if mechanism != LATE_MECHANISM:
        return own
    if own is None:
        return LATE_PHASE
    at, shift = own
    return (at, shift * LATE_PHASE[1]) if at == LATE_PHASE[0] else own


def _phase_found(times: np.ndarray, changepoints: Sequence[int], at: int, shift: float) -> bool:
    """A changepoint within PHASE_TOLERANCE of `at`, with the segments on either side in the planted
    direction and within a third of the planted size."""
    bounds = [0, *changepoints, len(times)]
    for i, cp in enumerate(bounds[1:-1], 1):
        if abs(cp - at) <= PHASE_TOLERANCE:
            before = float(np.median(times[bounds[i - 1]:cp]))
            after = float(np.median(times[cp:bounds[i + 1]]))
            planted = shift - 1
            return abs((after / before - 1) - planted) <= abs(planted) / 3
    return False


def rejudge(store: Store, on_finding: Callable[[Finding], None] | None = None) -> SelftestReport:
    """Judge again every self-test campaign already in the store (after a change to the rules), from its
    stored iterations: nothing is run."""
    report = SelftestReport()
    campaigns = [c for c in store.campaigns("selftest") if c.state == "done"]
    for repetition, campaign in enumerate(campaigns, 1):
        _analyse_and_judge(store, report, repetition, campaign.id, read(campaign).options.seed, on_finding)
    return report


def _analyse_and_judge(store: Store, report: SelftestReport, repetition: int, cid: int, seed: int,
                       on_finding: Callable[[Finding], None] | None) -> None:
    store.save_analysis(cid, analyse(store, cid, seed=seed).to_json())
    # The self-test's flat workload is not the calibration's, so the report says which δ judged it.
    report.deltas.add(delta_words(store.campaign(cid).config["options"]))
    for finding in _judge(store, repetition, cid):
        report.findings.append(finding)
        if on_finding:
            on_finding(finding)


def run_selftest(store: Store, build_root: Path, repetitions: int, budget: str = "default",
                 on_finding: Callable[[Finding], None] | None = None, wait_quiet_s: float = 0.0,
                 pairing: str | None = None) -> SelftestReport:
    study = read_study(STUDIES_DIR / "selftest" / "study.toml")
    if budget in study.budgets and study.budgets[budget].iterations < MIN_ITERATIONS:
        raise CampaignError(f"selftest: budget '{budget}' has {study.budgets[budget].iterations} iterations; "
                                 f"the planted phases need at least {MIN_ITERATIONS}")
    if budget in study.budgets and study.budgets[budget].process_executions < MIN_EXECUTIONS:
        raise CampaignError(f"selftest: budget '{budget}' has {study.budgets[budget].process_executions} process "
                            f"executions a cell; a verdict needs an interval, and an interval {MIN_EXECUTIONS}")
    builds = lifecycle.build(study, build_root, None)
    broken = [b for b in builds.values() if not b.available]
    if broken:
        raise CampaignError(f"selftest: cannot build {broken[0].mechanism}: {broken[0].reason}")
    report = SelftestReport()
    for repetition in range(1, repetitions + 1):
        options = timing.options_for(study, budget, None, None, seed=repetition, wait_quiet_s=wait_quiet_s,
                                     pairing=pairing)
        cid = lifecycle.start(TIMING, study, store, options, build_root,
                              prepared=lifecycle.prepare_built(TIMING, study, builds, options))
        _analyse_and_judge(store, report, repetition, cid, repetition, on_finding)
    return report
