"""Nearest first: when the time left cannot decide every open ratio, the blocks go first to the benchmarks
whose ratios are nearest an answer (`nearest_first` in a budget aimed at the question).

A round gives every open benchmark a block, so a time cap spreads the blocks evenly, and where some ratios
need ten times the blocks of others (their spread between blocks, or an estimate halfway to the margin's
edge) the cap can leave all of them short. Each round, every open ratio with at least question.RANK_FROM blocks gets a
projection (question.blocks_to_decide, or, decided faster or slower, the blocks its interval needs to be within
±decided_within), as it stands: its estimate and spread between blocks held. A benchmark's projection is its
nearest open ratio's, in seconds of its blocks as they now cost (a block serves all its open ratios). Ranked
nearest first, the benchmarks whose projections fit the time left run; the others *wait* for a later round,
when they are projected again with the time then left: none is stopped, the nearest always runs, and a
benchmark not yet ranked (fewer blocks, or no spread yet) always runs too. A waiting benchmark's cells say so in
their reasons each round, and one whose time runs out while it waits says from which round (waiting_since), so
that a report's cell left at 8 blocks is read as the rule's choice, not as the method's width.

It changes which rounds a ratio is looked at in, never how: every look keeps its interval at the confidence
the looks share (adaptive.py), so a ratio that waits cannot be decided more often than 1 % wrongly; a
projection from a spread estimated on 8 blocks can be wrong, which costs time, not correctness.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from bridgebench import question
from bridgebench.timing.result import Analysis

WAITS = "; waits this round: "  # how a waiting benchmark's cells' reasons go on, for the reader

Cell = tuple[str, str]


def projections(result: Analysis, open_cells: Iterable[Cell], baseline: str, within: float | None
                ) -> dict[str, float | None]:
    """Per open benchmark, the seconds of blocks its nearest open ratio would take as it stands (None: a ratio
    not ranked yet), each open cell's execution at what it costs now (Cell.execution_s). Its nearest, not its
    farthest: a block serves every open ratio of its benchmark (PUC Lua's beside luajit2's), and its cells must
    stay in step, block by block, to be paired; once the near ratios are decided the benchmark's projection is
    the next one's."""
    by_benchmark: dict[str, list[Cell]] = {}
    for cell in open_cells:
        by_benchmark.setdefault(cell[0], []).append(cell)
    out: dict[str, float | None] = {}
    for benchmark, cells in by_benchmark.items():
        lefts = [question.blocks_left(c.ratio, c.ratio_between_sd, result.equivalence, within)
                 if c and c.ratio else None for c in (result.cell(*cell) for cell in cells if cell[1] != baseline)]
        if not lefts or any(left is None for left in lefts):
            out[benchmark] = None
            continue
        nearest = min(left for left in lefts if left is not None)
        out[benchmark] = nearest * sum(_cost(result, cell) for cell in cells) if nearest else 0.0
    return out


def _cost(result: Analysis, cell: Cell) -> float:
    """What an open cell's next execution costs, as the analysis has it (nothing yet: free)."""
    found = result.cell(*cell)
    return (found.execution_s or 0.0) if found else 0.0


def waiting(projected: dict[str, float | None], left_s: float) -> dict[str, float]:
    """The benchmarks that wait this round, with their projections: ranked nearest first, those that do not
    fit in the time the nearer ones leave; the nearest never waits, nor one not ranked."""
    ranked = sorted((s, b) for b, s in projected.items() if s is not None)
    used, out = 0.0, {}
    for i, (seconds, benchmark) in enumerate(ranked):
        if i == 0 or used + seconds <= left_s:
            used += seconds
        else:
            out[benchmark] = seconds
    return out


def wait_reason(seconds: float, left_s: float) -> str:
    """What a waiting benchmark's cells add to their reasons this round."""
    more = f"about {seconds:.0f} s more" if seconds < math.inf else "more blocks than any campaign runs"
    return f"{WAITS}as they stand, its ratios would take {more}, and nearer answers come first ({left_s:.0f} s left)"


def waiting_since(history: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per benchmark waiting in the last judged round, the round its wait began: read from the stored decisions
    (their wait_projection_s), so that a resumed campaign knows it too."""
    rounds: dict[str, dict[int, bool]] = {}
    for d in history:
        waited = rounds.setdefault(d["benchmark"], {})
        waited[d["round"]] = waited.get(d["round"], False) or d["wait_projection_s"] is not None
    last = max((r for waited in rounds.values() for r in waited), default=-1)
    since = {}
    for benchmark, waited in rounds.items():
        r = last
        while waited.get(r):
            r -= 1
        if r < last:
            since[benchmark] = r + 1
    return since
