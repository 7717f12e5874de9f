"""Adaptive budgets: spend machine time where the verdict needs it.

Every benchmark × mechanism (a *cell*) first gets the budget's `process_executions`, interleaved as in a
fixed campaign. Then, round after round, each cell that is still *open* gets one more process execution,
cheapest cells first (shuffled when the campaign is). After each round every open cell is judged:

- *settled* when its steady-state 99% CI half-width is at most `until_ci` of its estimate and its class is
  the one it had without its latest process execution: more executions would not change what the report
  says (so a cell can settle after its first `process_executions`);
- *capped* when it has `max_process_executions` and has not settled;
- *failing* when it has had its first executions and none of them succeeded;
- *out of time* when its next process execution would take the campaign's executions (their wall time and
  any wait for a quiet machine) past `max_time_s`, judging by the cell's own executions so far. Such an
  execution is skipped and dropped from the plan, while cheaper cells that still fit go on: the last of
  the time goes to the cells it can still help. A campaign always ends with exactly what it planned.

Each round's verdicts are stored (`cell_decision`), so a resumed campaign goes on from the round it was in
and the report can say what settled, what did not, and why.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bridgebench.analysis import estimates
from bridgebench.campaign.config import AdaptiveBudget
from bridgebench.runner import Task
from bridgebench.stats import Estimate
from bridgebench.stats.executions import too_few
from bridgebench.store import Store

OPEN, SETTLED, CAPPED, FAILING, OUT_OF_TIME = "open", "settled", "capped", "failing", "out of time"
Cell = tuple[str, str]
RunTasks = Callable[[list[Task], Callable[[Task], bool]], list[Task]]  # (tasks, skip) -> the tasks skipped


@dataclass(frozen=True)
class Decision:
    state: str
    reason: str
    half_width: float | None  # the CI's half-width over the estimate, when there is one


def half_width(perf: Estimate | None) -> float | None:
    """The CI's half-width over the estimate; None without one (too few process executions, say)."""
    if not perf or perf.value <= 0 or perf.low is None or perf.high is None:
        return None
    return (perf.high - perf.low) / 2 / perf.value


def decide(executions: int, classification: str | None, perf: Estimate | None, previous: str | None,
           first: int, until_ci: float, cap: int) -> Decision:
    """The rule above for one cell after a round (a pure function: the tests drive it directly)."""
    hw = half_width(perf)
    shown = f"±{hw:.1%}" if hw is not None else "none"
    if classification is None:
        if executions >= first:
            return Decision(FAILING, f"none of its {executions} process executions succeeded", None)
        return Decision(OPEN, "no successful process execution yet", None)
    if hw is not None and hw <= until_ci and classification == previous:
        return Decision(SETTLED, f"CI {shown} ≤ ±{until_ci:.1%} and the class ({classification}) held", hw)
    why = (too_few(perf.executions) if perf is not None and not perf.has_interval
           else f"CI {shown} > ±{until_ci:.1%}" if hw is None or hw > until_ci
           else f"class {previous or 'not judged'} → {classification} with the last execution")
    if executions >= cap:
        return Decision(CAPPED, f"cap of {cap} process executions reached: {why}", hw)
    return Decision(OPEN, why, hw)


class _Clock:
    """The campaign's machine time against its cap (executions' wall time plus any wait for a quiet machine),
    and what each cell's next execution should cost: the median of its own so far. It reads each stored
    execution once, as it appears."""

    def __init__(self, store: Store, campaign_id: int, max_time_s: float) -> None:
        self.store, self.campaign_id, self.max_time_s = store, campaign_id, max_time_s
        self.spent = 0.0
        self.walls: dict[Cell, list[float]] = {}
        self.last_id = 0
        self.refresh()

    def refresh(self) -> None:
        for e in self.store.executions(self.campaign_id, after_id=self.last_id):
            self.spent += e.wall_s + (e.waited_s or 0.0)
            self.walls.setdefault((e.benchmark, e.mechanism), []).append(e.wall_s)
            self.last_id = max(self.last_id, e.id)

    def expected(self, cell: Cell) -> float:
        walls = self.walls.get(cell)
        return float(np.median(walls)) if walls else 0.0

    def fits(self, cell: Cell) -> bool:
        return self.spent + self.expected(cell) <= self.max_time_s

    def skip(self, task: Task) -> bool:
        self.refresh()
        return not self.fits((task.benchmark, task.mechanism))


def run(store: Store, campaign_id: int, cells: list[Cell], budget: AdaptiveBudget, run_tasks: RunTasks) -> None:
    """Run the campaign's rounds until every cell is settled, capped, failing or out of time."""
    first, until_ci, cap, max_time_s = budget.first, budget.until_ci, budget.cap, budget.max_time_s
    randomise, seed = budget.randomise, budget.seed
    history = store.decisions(campaign_id)
    state: dict[Cell, str] = {}
    for d in history:  # a resumed campaign: where each cell stood after the last judged round
        state[(d["benchmark"], d["mechanism"])] = d["state"]
    round_ = max((d["round"] for d in history), default=-1) + 1
    clock = _Clock(store, campaign_id, max_time_s)
    while True:
        skipped = run_tasks(store.pending(campaign_id), clock.skip)
        if skipped:
            store.drop_unrun(campaign_id)
        clock.refresh()
        open_cells = [c for c in cells if state.get(c, OPEN) == OPEN]
        judged = estimates(store, campaign_id, open_cells, seed=seed + round_)
        decisions = []
        for cell in open_cells:
            n, cls, perf, before = judged[cell]
            d = decide(n, cls, perf, before, first, until_ci, cap)
            if d.state == OPEN and not clock.fits(cell):
                d = Decision(OUT_OF_TIME, f"its next execution would pass the campaign's {max_time_s:g} s: "
                             f"{d.reason}", d.half_width)
            state[cell] = d.state
            decisions.append((*cell, n, cls, d.half_width, d.state, d.reason))
        store.record_decisions(campaign_id, round_, decisions)
        still_open = [c for c in cells if state[c] == OPEN]
        if not still_open:
            return
        planned = store.planned(campaign_id)
        next_seq = max(t.seq for t in planned) + 1
        counts: dict[Cell, int] = {}
        for t in planned:
            counts[(t.benchmark, t.mechanism)] = counts.get((t.benchmark, t.mechanism), 0) + 1
        if randomise:
            random.Random(seed * 1_000_003 + round_).shuffle(still_open)
        else:  # cheapest first: when the time cap bites, the cells it stops are the costly ones
            still_open.sort(key=clock.expected)
        store.add_planned(campaign_id, [Task(next_seq + i, b, m, counts[(b, m)])
                                        for i, (b, m) in enumerate(still_open)])
        round_ += 1
