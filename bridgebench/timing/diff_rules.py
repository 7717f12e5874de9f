"""Is the difference real? Compare two sides (two campaigns, or two mechanisms of one) benchmark by
benchmark in the words of a report's headline (question.py): *faster*, *slower*, *equivalent* within the
margin, *undecided*, and, beside them, *different* when the two behave differently.

Rules (after warmup_stats' differ):
- class counts: simultaneous 99% multinomial CIs (Goodman) on the share of process executions in each
  class (failed executions are a class too). If, for some class, the two sides' intervals do not overlap,
  the benchmark behaves differently: *different*.
- the shares of process executions that reach a steady state differ beyond chance (Fisher's exact test at
  the same confidence: 5 of 5 against 0 of 5 does, 1 of 5 against 0 of 5 does not, nor 5 of 5 against 1
  of 5): *different*. Else, one side with a steady state and the other with none is *undecided*: one
  execution's steady state on a day the machine steps is not a difference in behaviour (a slow-host
  self-test claimed A vs A *different* so when one side's steady state alone decided). warmup_stats calls
  one side's steady state against none *different* outright; the test also decides where a few of the
  side without one were read as steady (its power: `selftest --budget late`).
- otherwise steady performance. A side whose steady performance has no interval (fewer than 3 process
  executions: stats.executions) gives *undecided*: two processes say nothing of the spread between them.
  With the ratio B/A and its interval (lock-step blocks, paired by round within a campaign, else Welch's t
  over process executions), question.answer's rule: *slower* when the interval lies above 1, *faster*
  when below, *equivalent* when it lies within ±margin of 1, *undecided* when it holds 1 and reaches past
  the margin ("unchanged" would claim what the data do not show). So `diff` and a report's headline say
  the same. Without a ratio (a fleet's machines side by side), warmup_stats's rule: 99% CIs that do not
  overlap give faster or slower, overlapping ones undecided (two 99% intervals that must not overlap test
  at far more than 99%: the self-test found +2 % slower in 3 of 75 comparisons by it, methodology §6).
- beside it, a warm-up verdict from the 5–95% ranges of the steady iteration: *sooner* or *later* when
  the ranges do not overlap, *same* when they do; and the ratio B/A of steady performance with its CI.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridgebench import question
from bridgebench.instructions import SECONDS
from bridgebench.question import EQUIVALENT, FASTER, SLOWER, UNDECIDED
from bridgebench.stats import KINDS as EXECUTION_KINDS
from bridgebench.stats import Estimate, Spread
from bridgebench.stats.executions import too_few
from bridgebench.study import DEFAULT_EQUIVALENCE
from bridgebench.timing.result import FAILED, Cell

DIFFERENT = "different"
VERDICTS = (FASTER, SLOWER, EQUIVALENT, DIFFERENT, UNDECIDED)
CLAIMS = (FASTER, SLOWER, DIFFERENT)  # the verdicts that say the two sides differ

KINDS = (*EXECUTION_KINDS, FAILED)  # a failed process execution counts as a class of its own

# Which rule answered a comparison (the order they are tried in, the module's docstring): so that a count of
# verdicts can tell a difference in behaviour from one in speed without reading the reason's words.
CLASSES = "classes"  # the share of a class differs
REACHING = "reaching"  # the shares that reach a steady state (Fisher's exact test), also when it found none
NOTHING = "nothing"  # neither side reaches a steady state
TOO_FEW = "too few"  # a side's steady performance rests on too few process executions for an interval
RATIO = "ratio"  # the ratio's interval, in the headline's words
INTERVALS = "intervals"  # the two sides' own intervals, without a ratio
RULES = (CLASSES, REACHING, NOTHING, TOO_FEW, RATIO, INTERVALS)


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high


def multinomial_cis(counts: dict[str, int], confidence: float = 0.99) -> dict[str, Interval]:
    """Goodman's simultaneous confidence intervals for multinomial proportions."""
    n = sum(counts.values())
    if n == 0:
        return {k: Interval(0.0, 1.0) for k in KINDS}
    from scipy.stats import chi2  # imported when used: scipy costs the CLI ~0.8 s to start

    a = float(chi2.ppf(1 - (1 - confidence) / len(KINDS), 1))
    out = {}
    for kind in KINDS:
        ni = counts.get(kind, 0)
        half = np.sqrt(a * (a + 4 * ni * (n - ni) / n))
        out[kind] = Interval(max(0.0, (a + 2 * ni - half) / (2 * (n + a))),
                             min(1.0, (a + 2 * ni + half) / (2 * (n + a))))
    return out


@dataclass(frozen=True)
class Comparison:
    benchmark: str
    a: str
    b: str
    verdict: str
    reason: str
    rule: str  # which of RULES answered
    perf_a: Estimate | None
    perf_b: Estimate | None
    ratio: Estimate | None
    steady_iteration_a: Spread | None
    steady_iteration_b: Spread | None
    steady_iteration_overlap: bool | None
    warmup_verdict: str  # "sooner", "later", "same", or "—" when a side has no steady state
    classes_a: str
    classes_b: str
    metric: str = SECONDS  # what the steady figures measure (counting.METRICS)

    @property
    def too_few(self) -> bool:
        """Undecided because a side has too few process executions for an interval."""
        return self.rule == TOO_FEW


def _range(spread: Spread | None) -> Interval | None:
    return Interval(spread.p5, spread.p95) if spread else None


def _classes(cell: Cell) -> str:
    counts = cell.class_counts_with_failures()
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "—"


def compare_cells(benchmark: str, a_name: str, b_name: str, a: Cell, b: Cell, ratio: Estimate | None,
                  confidence: float = 0.99, margin: float = DEFAULT_EQUIVALENCE) -> Comparison:
    perf_a, perf_b = a.steady_performance, b.steady_performance
    it_a, it_b = _range(a.steady_iteration), _range(b.steady_iteration)
    ci_a = multinomial_cis(a.class_counts_with_failures(), confidence)
    ci_b = multinomial_cis(b.class_counts_with_failures(), confidence)
    split = [k for k in KINDS if not ci_a[k].overlaps(ci_b[k])]

    reach = _reach(a_name, a, b_name, b)
    if split:
        verdict, rule, reason = (DIFFERENT, CLASSES,
                                 f"the share of '{split[0]}' process executions differs (99% multinomial CIs)")
    elif reach is not None and reach[1] < 1 - confidence:
        verdict, rule, reason = DIFFERENT, REACHING, f"{reach[0]} (Fisher's exact test: p = {reach[1]:.2g})"
    elif perf_a is None and perf_b is None:
        verdict, rule, reason = UNDECIDED, NOTHING, "neither side reaches a steady state: nothing to compare"
    elif perf_a is None or perf_b is None:
        verdict, rule, reason = UNDECIDED, REACHING, (
            f"{reach[0]} (Fisher's exact test: p = {reach[1]:.2g}, not below {1 - confidence:.2g}: a share that "
            "chance gives)" if reach else "one side has no steady state")
    elif perf_a.low is None or perf_a.high is None or perf_b.low is None or perf_b.high is None:
        few = [f"{n}: {too_few(p.executions)}" for n, p in ((a_name, perf_a), (b_name, perf_b))
               if not p.has_interval]
        verdict, rule, reason = UNDECIDED, TOO_FEW, "; ".join(few)
    elif ratio is not None and ratio.low is not None and ratio.high is not None:
        said = question.answer(ratio, margin)
        verdict, rule, reason = (said.state, RATIO,
                                 f"the ratio {b_name}/{a_name} at {100 * ratio.confidence:.4g}%: {said.why}")
    elif perf_b.high < perf_a.low:
        verdict, rule, reason = FASTER, INTERVALS, f"{b_name}'s steady-performance CI lies wholly below {a_name}'s"
    elif perf_b.low > perf_a.high:
        verdict, rule, reason = SLOWER, INTERVALS, f"{b_name}'s steady-performance CI lies wholly above {a_name}'s"
    else:
        verdict, rule, reason = (UNDECIDED, INTERVALS,
                                 "the steady-performance CIs overlap (no ratio to judge equivalence by)")
    if it_a is None or it_b is None:
        warmup = "—"
    elif it_a.overlaps(it_b):
        warmup = "same"
    else:
        warmup = "sooner" if it_b.high < it_a.low else "later"
    return Comparison(
        benchmark, a_name, b_name, verdict, reason, rule, perf_a, perf_b, ratio,
        a.steady_iteration, b.steady_iteration,
        it_a.overlaps(it_b) if it_a and it_b else None, warmup, _classes(a), _classes(b),
    )


def _reach(a_name: str, a: Cell, b_name: str, b: Cell) -> tuple[str, float] | None:
    """How many of each side's process executions reach a steady state (those its steady performance rests on;
    its failures count as not reaching one), in words, and Fisher's exact test's p on reached / not reached;
    None when the shares are the same or a side's count is not known."""
    sides = []
    for name, c in ((a_name, a), (b_name, b)):
        perf = c.steady_performance
        reached = 0 if perf is None else perf.executions
        if reached is None:
            return None
        sides.append((reached, c.executions_ok + len(c.failures), name))
    (k, n, more), (j, m, fewer) = sorted(sides, key=lambda side: side[0] / max(side[1], 1), reverse=True)
    if k * m == j * n:
        return None
    from scipy.stats import fisher_exact  # imported when used, as in multinomial_cis

    p = float(fisher_exact([[k, n - k], [j, m - j]]).pvalue)
    said = (f"only {more} reaches a steady state, in {k} of {n} process executions against 0 of {m}" if j == 0
            else f"{more} reaches a steady state in {k} of {n} process executions, {fewer} in {j} of {m}")
    return said, p


def overall(comparisons: list[Comparison]) -> str:
    counts = {v: sum(c.verdict == v for c in comparisons) for v in VERDICTS}
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "nothing compared"
