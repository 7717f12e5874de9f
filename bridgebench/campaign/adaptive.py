"""Adaptive budgets: spend machine time where the verdict needs it.

Every benchmark × mechanism (a *cell*) first gets the budget's `process_executions`, interleaved as in a
fixed campaign. Then, round after round, each cell that is still *open* gets one more process execution,
in blocks (blocks(): a benchmark's open cells back to back in random order, the cheapest blocks first, or
shuffled when the campaign is). After each round every open cell is judged:

- *settled* when its steady-state 99% CI half-width is at most `until_ci` of its estimate and its class is
  the one it had without its latest process execution: more executions would not change what the report
  says (so a cell can settle after its first `process_executions`);
- *capped* when it has `max_process_executions` and has not settled;
- *failing* when it has had its first executions and none of them succeeded;
- *out of time* when its next process execution would take the campaign's executions (their wall time and
  any wait for a quiet machine) past `max_time_s`, judging by the cell's own executions so far. Such an
  execution is skipped and dropped from the plan, while cheaper cells that still fit go on: the last of
  the time goes to the cells it can still help. A campaign always ends with exactly what it planned.

Aimed at the study's question (`until_decided`), a cell with a ratio to the baseline settles instead when
that ratio is *decided* (question.py: its interval excludes 1, or lies within the study's equivalence margin
of 1), judged by the same analysis the report makes; the baseline's cell of a benchmark stays open while any
other cell of the benchmark is open, so the rounds become blocks of the benchmarks still undecided. Each
round looks at the ratios again, and stopping at the first look that decides would make "decided" more
likely than the intervals' 99 % allow; so the budget decides with intervals at 1 - 0.01/L (L: the most
looks a cell can get, from its first executions to its cap), and by Bonferroni's inequality a cell whose
true ratio is 1 is stopped as different with probability at most 1 % over all its looks. A budget may judge
ratios only at look points that grow by a factor (`look_growth`, options.look_points: 3, 5, 8, 12, 18… for
1.5) instead of after every round: the rounds between go on, and with fewer looks each interval is
narrower. With `decided_within`, a ratio decided faster or slower also waits for its interval to be that
narrow (a looks-corrected interval from 3 blocks can say "slower" while spanning ×2.7–×16). Cells without
a ratio (the baseline's, cells of a study with no baseline) keep the CI rule.

Each round's verdicts are stored (`cell_decision`), so a resumed campaign goes on from the round it was in
and the report can say what settled, what did not, and why.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from bridgebench import question
from bridgebench.campaign import nearest
from bridgebench.options import AdaptiveBudget, looks
from bridgebench.result import CAPPED, FAILING, OPEN, OUT_OF_TIME, SETTLED
from bridgebench.runner import Task
from bridgebench.stats import Estimate
from bridgebench.stats.executions import MIN_EXECUTIONS, each_look, too_few
from bridgebench.store import Store
from bridgebench.timing.analysis import CONFIDENCE, analyse, estimates
from bridgebench.timing.result import Analysis

Cell = tuple[str, str]
RunTasks = Callable[[list[Task], Callable[[Task], bool]], list[Task]]  # (tasks, skip) -> the tasks skipped


@dataclass(frozen=True)
class Decision:
    state: str
    reason: str
    half_width: float | None  # the CI's half-width over the estimate, when there is one


def half_width(perf: Estimate | None) -> float | None:
    """The CI's half-width over the estimate: its reach (the farther end), so that "within ±5 %" means both
    ends within 5 % of it, as the report's ± shows it and as nearest.py projects it; None without one (too few
    process executions, say). A log-scale interval exp(m ± h) reaches e^h - 1 above the estimate and 1 - e^-h
    below: the mean of the two sides, used until 2026-11-27, let a ratio stop with its upper end 5.1 % above
    its estimate under a ±5 % rule."""
    reach = perf.reach if perf else None
    return None if perf is None or reach is None or perf.value <= 0 else reach / perf.value


def decide(executions: int, classification: str | None, perf: Estimate | None, previous: str | None,
           first: int, until_ci: float, cap: int, needed: int = MIN_EXECUTIONS) -> Decision:
    """The rule above for one cell after a round (a pure function: the tests drive it directly); `needed`:
    the executions an interval takes (named when there are fewer)."""
    hw = half_width(perf)
    shown = f"±{hw:.1%}" if hw is not None else "none"
    if classification is None:
        return _without_success(executions, first)
    if hw is not None and hw <= until_ci and classification == previous:
        return Decision(SETTLED, f"CI {shown} ≤ ±{until_ci:.1%} and the class ({classification}) held", hw)
    why = (too_few(perf.executions, needed) if perf is not None and not perf.has_interval
           else f"CI {shown} > ±{until_ci:.1%}" if hw is None or hw > until_ci
           else f"class {previous or 'not judged'} → {classification} with the last execution")
    if executions >= cap:
        return Decision(CAPPED, f"cap of {cap} process executions reached: {why}", hw)
    return Decision(OPEN, why, hw)


def _without_success(executions: int, first: int) -> Decision:
    if executions >= first:
        return Decision(FAILING, f"none of its {executions} process executions succeeded", None)
    return Decision(OPEN, "no successful process execution yet", None)


def _not_yet_judged(executions: int, classification: str | None, first: int) -> Decision | None:
    """A cell with no success yet, or short of its first executions, under the rule aimed at the question."""
    if classification is None:
        return _without_success(executions, first)
    if executions < first:
        return Decision(OPEN, f"{executions} of its first {first} process executions", None)
    return None


def stopping_confidence(first: int, cap: int, growth: float = 1.0) -> float:
    """The confidence the rule aimed at the question decides at: 1 - 0.01 over the looks (Bonferroni). The
    analysis of such a campaign computes every interval at it (analysis.interval_looks), so the report's
    verdict is the budget's."""
    return each_look(CONFIDENCE, looks(first, cap, growth))


def decide_ratio(executions: int, classification: str | None, answer: question.Answer, first: int,
                 cap: int, next_look: int | None = None, within: float | None = None,
                 ratio_width: float | None = None) -> Decision:
    """The rule aimed at the question for a cell with a ratio to the baseline (a pure function). `next_look`:
    the count of executions at which the ratio is judged next, when this count is not a look (the ratio is
    then not judged); `within`: a ratio decided faster or slower settles only once its CI's half-width over
    its estimate (`ratio_width`) is at most this."""
    early = _not_yet_judged(executions, classification, first)
    if early:
        return early
    if next_look is not None and executions < cap:
        return Decision(OPEN, f"judged next at {next_look} process executions (now {answer.state}: {answer.why})",
                        None)
    decided = answer.state in question.DECIDED
    wide = (decided and within is not None and answer.state != question.EQUIVALENT
            and (ratio_width is None or ratio_width > within))
    if decided and not wide:
        return Decision(SETTLED, f"its ratio to the baseline is decided, {answer.state}: {answer.why}", None)
    shown = f"±{ratio_width:.1%}" if ratio_width is not None else "none"
    why = (f"decided, {answer.state}, but its CI ({shown}) is not yet within ±{within:.1%}" if wide
           else f"undecided: {answer.why}")
    if executions >= cap:
        return Decision(CAPPED, f"cap of {cap} process executions reached: {why}", None)
    return Decision(OPEN, why, None)


def decide_baseline(executions: int, classification: str | None, others: list[str], first: int,
                    cap: int) -> Decision:
    """The baseline's cell of a benchmark under the rule aimed at the question: open while another cell of
    its benchmark is (its ratios need both sides), given the others' states after this round."""
    early = _not_yet_judged(executions, classification, first)
    if early:
        return early
    waiting = sum(state == OPEN for state in others)
    if not waiting:
        return Decision(SETTLED, "every ratio of its benchmark has stopped (decided, capped or out of time)",
                        None)
    if executions >= cap:
        return Decision(CAPPED, f"cap of {cap} process executions reached with {waiting} ratio(s) undecided", None)
    return Decision(OPEN, f"{waiting} ratio(s) of its benchmark undecided", None)


Judged = dict[Cell, tuple[int, str | None, Decision]]  # per cell: executions stored, class, the decision
# A campaign kind's own rule for a round (a load campaign's, campaign/loadtest.py): (open cells, round) -> Judged
Judge = Callable[[list[Cell], int], Judged]


def _judge_by_ci(store: Store, campaign_id: int, open_cells: list[Cell], budget: AdaptiveBudget,
                 seed: int) -> Judged:
    """This round's decisions by each cell's own CI (decide())."""
    judged = estimates(store, campaign_id, open_cells, seed=seed)
    out: Judged = {}
    for cell in open_cells:
        n, cls, perf, before = judged[cell]
        out[cell] = (n, cls, decide(n, cls, perf, before, budget.first, budget.until_ci, budget.cap))
    return out


def _judge_question(store: Store, campaign_id: int, open_cells: list[Cell], state: dict[Cell, str],
                    budget: AdaptiveBudget, baseline: str, seed: int) -> tuple[Judged, Analysis]:
    """This round's decisions under the rule aimed at the question, from the analysis the report makes (whose
    intervals are at the looks-corrected confidence); each with its cell's CI half-width, for the record."""
    result = analyse(store, campaign_id, seed=seed)
    stored: dict[Cell, int] = {}
    for e in store.executions(campaign_id):
        stored[(e.benchmark, e.mechanism)] = stored.get((e.benchmark, e.mechanism), 0) + 1
    out: dict[Cell, Decision] = {}
    for cell in open_cells:
        if cell[1] == baseline:
            continue
        c = result.cell(*cell)
        n = stored.get(cell, 0)
        out[cell] = decide_ratio(n, c.classification if c else None,
                                 question.answer(c.ratio if c else None, result.equivalence), budget.first,
                                 budget.cap, None if budget.is_look(n) else budget.next_look(n), budget.within,
                                 half_width(c.ratio if c else None))
    for cell in open_cells:
        if cell[1] != baseline:
            continue
        c = result.cell(*cell)
        others = [out[o].state if o in out else state.get(o, OPEN) for o in state if o[0] == cell[0] and o != cell]
        out[cell] = decide_baseline(stored.get(cell, 0), c.classification if c else None, others, budget.first,
                                    budget.cap)
    return {cell: (stored.get(cell, 0), c.classification if (c := result.cell(*cell)) else None,
                   replace(d, half_width=half_width(c.steady_performance if c else None)))
            for cell, d in out.items()}, result


def blocks(cells: list[Cell], expected: Callable[[Cell], float], rng: random.Random,
           shuffle_blocks: bool) -> list[Cell]:
    """A round's executions in blocks, one a benchmark: each of its open mechanisms once, back to back, in
    an order drawn afresh for every block (randomised multiple interleaved trials, Abedi & Brecht 2017), so
    that a drift of the machine falls on every side of the benchmark's ratios alike and the rounds pair
    closely. Blocks go cheapest first (when the time cap bites, it stops the costly ones), or in random
    order with `randomise`. The order is stored with the plan."""
    by_benchmark: dict[str, list[Cell]] = {}
    for cell in cells:
        by_benchmark.setdefault(cell[0], []).append(cell)
    groups = list(by_benchmark.values())
    for group in groups:
        rng.shuffle(group)
    if shuffle_blocks:
        rng.shuffle(groups)
    else:
        groups.sort(key=lambda group: sum(expected(c) for c in group))
    return [cell for group in groups for cell in group]


def blocks_ahead(open_cells: list[Cell], counts: dict[Cell, int], budget: AdaptiveBudget) -> dict[str, int]:
    """Per benchmark with open cells, the blocks until its next look: the fewest any of its open cells needs
    to reach its next look point (at least one, never past the cap)."""
    ahead: dict[str, int] = {}
    for cell in open_cells:
        n = counts[cell]
        k = max(1, min(budget.next_look(n), budget.cap) - n) if n < budget.cap else 1
        ahead[cell[0]] = min(ahead.get(cell[0], k), k)
    return ahead


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


def reopened(state: dict[Cell, str], baseline: str | None) -> dict[Cell, str]:
    """A resumed campaign's cells as its next round judges them: those that stopped out of time are open again
    (the round re-judges them against the clock, so under the same cap they stop again without running; under a
    raised one they go on), and so is the baseline of a benchmark with a ratio open again, which its ratios
    need."""
    out = {c: OPEN if s == OUT_OF_TIME else s for c, s in state.items()}
    again = {b for (b, m), s in out.items() if s == OPEN and m != baseline}
    return {(b, m): OPEN if m == baseline and b in again else s for (b, m), s in out.items()}


def run(store: Store, campaign_id: int, cells: list[Cell], budget: AdaptiveBudget, run_tasks: RunTasks,
        baseline: str | None = None, judge: Judge | None = None) -> None:
    """Run the campaign's rounds until every cell is settled, capped, failing or out of time. `judge`: the
    campaign kind's own rule for a round, instead of a timing campaign's."""
    max_time_s = budget.max_time_s
    randomise, seed = budget.randomise, budget.seed
    aimed = budget.until_decided and baseline is not None and any(m == baseline for _, m in cells)
    history = store.decisions(campaign_id)
    state: dict[Cell, str] = {}
    for d in history:  # a resumed campaign: where each cell stood after the last judged round
        state[(d["benchmark"], d["mechanism"])] = d["state"]
    state = reopened(state, baseline if aimed else None)
    round_ = max((d["round"] for d in history), default=-1) + 1
    waited_since = nearest.waiting_since(history)  # a benchmark waiting for nearer answers: since which round
    clock = _Clock(store, campaign_id, max_time_s)
    while True:
        skipped = run_tasks(store.pending(campaign_id), clock.skip)
        if skipped:
            store.drop_unrun(campaign_id)
        clock.refresh()
        open_cells = [c for c in cells if state.get(c, OPEN) == OPEN]
        result: Analysis | None = None
        if judge is not None:
            judged = judge(open_cells, round_)
        elif aimed and baseline:
            judged, result = _judge_question(store, campaign_id, open_cells, {c: state.get(c, OPEN) for c in cells},
                                             budget, baseline, seed)
        else:
            judged = _judge_by_ci(store, campaign_id, open_cells, budget, seed + round_)
        for cell in open_cells:
            n, cls, d = judged[cell]
            if d.state == OPEN and not clock.fits(cell):
                waited = (f"; from round {waited_since[cell[0]] + 1} on its benchmark waited for "
                          f"nearer answers, at {n} process executions" if cell[0] in waited_since else "")
                d = Decision(OUT_OF_TIME, f"its next execution would pass the campaign's {max_time_s:g} s: "
                             f"{d.reason}{waited}", d.half_width)
                judged[cell] = (n, cls, d)
            state[cell] = d.state
        still_open = [c for c in cells if state[c] == OPEN]
        waits: dict[str, float] = {}
        if result is not None and baseline and budget.nearest_first and still_open:
            left = max_time_s - clock.spent
            waits = nearest.waiting(nearest.projections(result, still_open, baseline, budget.within), left)
        decisions = []
        for cell in open_cells:
            n, cls, d = judged[cell]
            reason = d.reason
            if cell[0] in waits:
                reason += nearest.wait_reason(waits[cell[0]], max_time_s - clock.spent)
            decisions.append((*cell, n, cls, d.half_width, d.state, reason, waits.get(cell[0])))
        store.record_decisions(campaign_id, round_, decisions)
        if not still_open:
            return
        waited_since = {b: waited_since.get(b, round_) for b in waits}
        still_open = [c for c in still_open if c[0] not in waits]
        planned = store.planned(campaign_id)
        next_seq = max(t.seq for t in planned) + 1
        counts: dict[Cell, int] = {}
        for t in planned:
            counts[(t.benchmark, t.mechanism)] = counts.get((t.benchmark, t.mechanism), 0) + 1
        # Aimed at the question, a ratio is judged only at its look points: a round gives each benchmark the
        # blocks up to its next one (interleaved, one block a benchmark in turn), not one block and a judgement.
        ahead = blocks_ahead(still_open, counts, budget) if result is not None else {b: 1 for b, _ in still_open}
        rng = random.Random(seed * 1_000_003 + round_)
        tasks: list[Task] = []
        for i in range(max(ahead.values())):
            for b, m in blocks([c for c in still_open if ahead[c[0]] > i], clock.expected, rng, randomise):
                tasks.append(Task(next_seq + len(tasks), b, m, counts[(b, m)] + i))
        store.add_planned(campaign_id, tasks)
        round_ += 1
