"""The study's question and its answer in words: every mechanism against the baseline, the study's headline
mechanism first ("luajit2 vs LuaJIT: faster on 3 benchmarks, slower on 2, equivalent within 2 % on 8,
undecided on 3").

Each ratio to the baseline (time per call, B over A) is *decided* when its interval excludes 1 (B is
*faster* or *slower*), or lies within ±equivalence of 1 (*equivalent*: whatever the difference is, it is
smaller than the study cares about); otherwise, or without an interval (too few process executions), it is
*undecided*. Pure functions over results: the reports and an adaptive budget aimed at the question ask the
same rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from bridgebench.digits import significant
from bridgebench.stats import Estimate
from bridgebench.stats.executions import MIN_EXECUTIONS, t_quantile, too_few

FASTER, SLOWER, EQUIVALENT, UNDECIDED = "faster", "slower", "equivalent", "undecided"
DECIDED = (FASTER, SLOWER, EQUIVALENT)


@dataclass(frozen=True)
class Answer:
    state: str  # FASTER, SLOWER, EQUIVALENT or UNDECIDED
    why: str


def answer(ratio: Estimate | None, equivalence: float, needed: int = MIN_EXECUTIONS) -> Answer:
    """What one ratio B/A (of time per call) says, by the rule above (`needed`: the executions a side needs
    for an interval, named when it has fewer)."""
    if ratio is None:
        return Answer(UNDECIDED, "no ratio: a side has no steady state")
    if ratio.low is None or ratio.high is None:
        return Answer(UNDECIDED, too_few(ratio.executions, needed))
    shown = f"{ratio.low:.3f}–{ratio.high:.3f}"
    if ratio.high < 1:
        return Answer(FASTER, f"the interval {shown} lies below 1")
    if ratio.low > 1:
        return Answer(SLOWER, f"the interval {shown} lies above 1")
    if 1 - equivalence <= ratio.low and ratio.high <= 1 + equivalence:
        return Answer(EQUIVALENT, f"the interval {shown} lies within ±{equivalence:.0%} of 1")
    return Answer(UNDECIDED, f"the interval {shown} holds 1 and reaches beyond ±{equivalence:.0%}")


MOST_BLOCKS = 100_000  # a projection past this is "none" for any practical purpose


def blocks_to_decide(estimate: float, sd: float, confidence: float, equivalence: float) -> tuple[str, int | None]:
    """What more lock-step blocks would answer for a ratio, and the fewest blocks in all that would answer it,
    if its estimate and its spread between blocks (`sd`, log scale) held: the answer by the rule above with
    Student's t over blocks at `confidence`, exp(mean ± t·sd/√n). *Equivalent* needs t·sd/√n to fit between
    the estimate's distance from 1 and the margin, *faster* or *slower* below that distance; whichever leaves
    more room is the one more blocks reach. None: no count up to MOST_BLOCKS would. A projection, not a
    promise: the spread is itself estimated from the blocks so far."""
    distance = abs(math.log(estimate))
    room = min(math.log1p(equivalence), -math.log1p(-equivalence)) - distance
    target, reach = ((EQUIVALENT, room) if room > distance
                     else (SLOWER if estimate > 1 else FASTER, distance))
    return target, blocks_to_reach(reach, sd, confidence)


RANK_FROM = 8  # blocks: a spread between fewer is too rough to project a ratio by (the third look of 3, 5, 8…)


def blocks_left(ratio: Estimate, sd: float | None, margin: float, within: float | None) -> float | None:
    """More blocks one ratio would take as it stands; math.inf when no count would decide it, None when it is
    not ranked yet (fewer than RANK_FROM blocks, or no interval or spread)."""
    if ratio.executions < RANK_FROM or sd is None or not ratio.has_interval or ratio.value <= 0:
        return None
    if answer(ratio, margin).state in (FASTER, SLOWER) and within is not None:
        needed = blocks_to_reach(math.log1p(within), sd, ratio.confidence)
    else:
        needed = blocks_to_decide(ratio.value, sd, ratio.confidence, margin)[1]
    return math.inf if needed is None else max(0, needed - ratio.executions)


def blocks_to_reach(reach: float, sd: float, confidence: float) -> int | None:
    """The fewest blocks whose interval's half-width (log scale, Student's t over blocks at `confidence`,
    t·sd/√n) is below `reach`; None: none up to MOST_BLOCKS (or no room at all)."""
    if reach <= 0:
        return None

    def decides(n: int) -> bool:
        return t_quantile(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n) < reach

    # The half-width shrinks as blocks are added (t falls with the degrees of freedom, and 1/√n): bisect.
    low, high = MIN_EXECUTIONS, MOST_BLOCKS
    if decides(low):
        return low
    if not decides(high):
        return None
    while high - low > 1:  # decides(high) and not decides(low)
        mid = (low + high) // 2
        low, high = (low, mid) if decides(mid) else (mid, high)
    return high


def summary(subject: str, baseline: str, answers: Iterable[tuple[str, Answer]], equivalence: float,
            confidence: float, sizes: dict[str, float] | None = None) -> str:
    """One line: how many benchmarks got each answer, with how much where faster or slower (the ratio, or
    the range of ratios, from `sizes`: benchmark -> ratio), naming the undecided ones (up to eight)."""
    answers = list(answers)
    words = {FASTER: "faster", SLOWER: "slower", EQUIVALENT: f"equivalent within {equivalence:.0%}",
             UNDECIDED: "undecided"}
    parts = []
    for state, word in words.items():
        benches = [bench for bench, a in answers if a.state == state]
        if benches:
            named = f" ({', '.join(benches)})" if state == UNDECIDED and len(benches) <= 8 else ""
            ratios = sorted(sizes[b] for b in benches if sizes and b in sizes) if state in (FASTER, SLOWER) else []
            size = (f": {_times(ratios[0])}" if len(ratios) == 1 or (ratios and _times(ratios[0]) == _times(ratios[-1]))
                    else f": {_times(ratios[0])}–{_times(ratios[-1])}" if ratios else "")
            parts.append(f"{word} on {len(benches)}{size}{named}")
    total = len(answers)
    return (f"{subject} vs {baseline}, {total} benchmark{'s' if total != 1 else ''}: "
            + (", ".join(parts) if parts else "nothing to compare") + f" ({confidence:.0%})")


def _times(ratio: float) -> str:
    """A ratio as the headline gives it: ×0.05, ×38, ×19,540; between ×0.5 and ×2, where the words are about how
    far from 1 it is, with two significant digits of that distance (×1.03 for 1.0302, ×1.052 for 1.0516, not
    ×1.1; ×0.9996, not ×1)."""
    if ratio >= 1000:
        return f"×{ratio:,.0f}"
    if ratio >= 10:
        return f"×{ratio:.0f}"
    if not 0.5 <= ratio < 2 or ratio == 1:  # two significant digits, never in exponent notation ("×1.5e-05")
        return f"×{significant(ratio, 2)}"
    decimals = min(8, 1 - math.floor(math.log10(abs(ratio - 1))))
    return f"×{ratio:.{decimals}f}".rstrip("0").rstrip(".")
