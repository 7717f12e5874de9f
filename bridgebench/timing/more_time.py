"""What more time would decide: for a campaign whose adaptive budget stopped ratios out of time, how many blocks
each benchmark's undecided ratios would take as they stand, and about how many seconds of executions, so that
a report can say what `run --resume --max-time T` to give instead of "T above the cap". The analysis keeps the
projections (Analysis.more_time), so that the JSON report holds them for a program to read, as the other reports show
them.

A ratio's projection is question.blocks_left (its estimate and spread between blocks held: the count at which
its interval would be narrow enough), moved on to the look point that judges it, for an aimed budget judges a
ratio only there; past the budget's cap of blocks it is out of reach. A benchmark's blocks serve all its open
ratios and its baseline, and a member leaves the block once its ratio is decided, so its seconds are summed
stage by stage: the blocks up to each ratio's count, each at the cost of the members still in it (their next
execution's, analysis._execution_s). A projection, not a promise: a spread from a few dozen blocks is itself
rough, and an estimate can move toward the margin's edge, where any count is too few. So each projection comes with
the seconds it would take at either end of its ratios' spreads' 99 % chi-square intervals (the estimates held):
from a dozen blocks those ends are about 0.6 and 2 times the spread, so a count 0.4 to 4 times as many.
"""

from __future__ import annotations

import math
import statistics

from bridgebench import question
from bridgebench.result import OUT_OF_TIME
from bridgebench.stats.spread import sd_bounds
from bridgebench.timing.result import Analysis, Cell, Projection

PROJECTED, OUT_OF_REACH, NOT_YET = "projected", "out of reach", "not projected yet"  # in the order shown
SPREAD_CONFIDENCE = 0.99  # of the interval whose ends give a projection's range


def project(result: Analysis) -> list[Projection]:
    """Per benchmark with a ratio stopped out of time, its projection; nearest (fewest seconds) first, then
    those out of reach, then those not projected. Empty unless the budget is aimed at the question."""
    a, baseline = result.adaptive, result.baseline
    if not a or not a.until_decided or not baseline:
        return []
    stopped: dict[str, list[Cell]] = {}
    for c in result.cells:
        if c.mechanism != baseline and c.adaptive and c.adaptive.state == OUT_OF_TIME:
            stopped.setdefault(c.benchmark, []).append(c)
    out = [_benchmark(result, benchmark, cells) for benchmark, cells in stopped.items()]
    order = (PROJECTED, OUT_OF_REACH, NOT_YET)
    return sorted(out, key=lambda p: (order.index(p.state), p.seconds or 0.0, p.benchmark))


def _benchmark(result: Analysis, benchmark: str, cells: list[Cell]) -> Projection:
    a = result.adaptive
    assert a is not None and result.baseline is not None
    unranked = [result.label(c.mechanism) for c in cells
                if c.ratio is None or c.execution_s is None or _left(result, c, HELD) is None]
    if unranked:
        return Projection(benchmark, NOT_YET, why=f"{', '.join(unranked)}: fewer than {question.RANK_FROM} "
                          "blocks, or no spread between them")
    far = [result.label(c.mechanism) for c in cells if _judged(result, c, HELD) is None]
    if far:
        return Projection(benchmark, OUT_OF_REACH, why=f"{', '.join(far)}: not within {a.max_process_executions} "
                          "blocks")
    base = result.cell(benchmark, result.baseline)
    base_s = base.execution_s if base and base.execution_s is not None else 0.0
    now = min(c.ratio.executions for c in cells if c.ratio)
    (blocks, seconds), low, high = (_staged(result, cells, now, base_s, end) for end in (HELD, LOW, HIGH))
    assert low is not None
    return Projection(benchmark, PROJECTED, blocks, seconds, blocks_low=low[0], seconds_low=low[1],
                      blocks_high=high[0] if high else None, seconds_high=high[1] if high else None)


HELD, LOW, HIGH = "held", "low", "high"  # the spread a ratio is projected with: as estimated, or an end of its interval


def _sd(c: Cell, end: str) -> float | None:
    """A ratio's spread between blocks, or an end of its SPREAD_CONFIDENCE interval (over its blocks)."""
    sd = c.ratio_between_sd
    if sd is None or end == HELD or c.ratio is None or c.ratio.executions < 2:
        return sd
    low, high = sd_bounds(sd, c.ratio.executions, SPREAD_CONFIDENCE)
    return low if end == LOW else high


def _left(result: Analysis, c: Cell, end: str) -> float | None:
    a = result.adaptive
    assert a is not None and c.ratio is not None
    return question.blocks_left(c.ratio, _sd(c, end), result.equivalence, a.decided_within)


def _judged(result: Analysis, c: Cell, end: str) -> int | None:
    a, left = result.adaptive, _left(result, c, end)
    assert a is not None and c.ratio is not None and left is not None
    return _judged_at(c.ratio.executions, left, a.look_points, a.max_process_executions)


def _staged(result: Analysis, cells: list[Cell], now: int, base_s: float, end: str) -> tuple[int, float] | None:
    """The blocks that decide all of a benchmark's stopped ratios and their seconds, stage by stage: up to each
    ratio's count, at the cost of the baseline and the members still in the blocks; None past the cap."""
    targets: list[tuple[int, float]] = []  # per ratio: the count that decides it, what its member costs
    for c in cells:
        at = _judged(result, c, end)
        if at is None:
            return None
        assert c.execution_s is not None
        targets.append((at, c.execution_s))
    seconds, done = 0.0, now
    for at in sorted({t for t, _ in targets}):
        members = sum(s for t, s in targets if t >= at)
        seconds += (at - done) * (base_s + members)
        done = at
    return done, seconds


def _judged_at(blocks: int, left: float, look_points: tuple[int, ...], cap: int) -> int | None:
    """The count at which a ratio with `blocks` now, that would decide `left` more blocks on, is judged
    decided: the first look point at or past that (the next round's count when the budget judges every round);
    None past the cap."""
    if math.isinf(left):
        return None
    wanted = max(blocks + 1, blocks + math.ceil(left))
    if wanted > cap:
        return None
    return min((p for p in look_points if p >= wanted), default=wanted)


def seconds_more(projections: list[Projection]) -> float:
    """The seconds of executions every projected benchmark would take, in all."""
    return sum(p.seconds for p in projections if p.seconds is not None)


def max_time(result: Analysis, projections: list[Projection]) -> float | None:
    """The campaign's time cap that would give every projected benchmark its seconds: today's cap and theirs,
    rounded up to a whole minute; None when none is projected."""
    if not result.adaptive or not any(p.state == PROJECTED for p in projections):
        return None
    return 60.0 * math.ceil((result.adaptive.max_time_s + seconds_more(projections)) / 60.0)


def within_share(result: Analysis) -> float | None:
    """The median share within (stats.lockstep.spread) of the ratios stopped out of time: whether a quieter
    machine, or only more blocks, would decide them sooner. None where none of them has one."""
    shares = [c.ratio_within_share for c in result.cells if c.mechanism != result.baseline and c.adaptive
              and c.adaptive.state == OUT_OF_TIME and c.ratio_within_share is not None]
    return statistics.median(shares) if shares else None
