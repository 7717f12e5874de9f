"""Fixed budgets that replace dropped blocks (a budget's `replace_dropped`).

A ratio to the baseline rests on the blocks (lock-step) or process executions (sequential) in which both sides
reach a steady state; one whose member has none counts for nothing. So a fixed budget of k blocks can give an
interval from fewer, and where processes fall into speed modes an interval from few blocks misses more often
than its 1 % (every block may draw one mode: stats.lockstep.all_alike). With `replace_dropped`, once the plan
has run, a benchmark whose ratio rests on fewer than k, where both of its sides reach a steady state in some
executions, gets one more block, and again after each, until every such ratio rests on k or the benchmark has
run 2k blocks. A side that never settles gets none: more of it would not give the ratio a block.

What is added is planned and stored like the rest, so an interrupted campaign resumes where it was, and the
replacements are judged again from the stored executions each time.
"""

from __future__ import annotations

from bridgebench.options import TimingOptions
from bridgebench.runner import Task
from bridgebench.store import Store
from bridgebench.timing.analysis import analyse
from bridgebench.timing.result import Analysis


def short(result: Analysis, planned: list[Task], wanted: int, baseline: str) -> list[str]:
    """The benchmarks with a ratio to the baseline that rests on fewer than `wanted` blocks, where both of its
    sides have a steady performance, and that have planned fewer than twice `wanted` blocks."""
    blocks: dict[str, int] = {}
    for task in planned:
        blocks[task.benchmark] = max(blocks.get(task.benchmark, 0), task.pexec + 1)
    out: list[str] = []
    for cell in result.cells:
        base = result.cell(cell.benchmark, baseline)
        if (cell.mechanism == baseline or cell.benchmark in out or blocks.get(cell.benchmark, 0) >= 2 * wanted
                or cell.steady_performance is None or base is None or base.steady_performance is None):
            continue
        if cell.ratio is None or (cell.ratio.executions or 0) < wanted:
            out.append(cell.benchmark)
    return out


def more(store: Store, campaign_id: int, options: TimingOptions, baseline: str | None) -> list[Task]:
    """The next block of each benchmark that needs one (short()), planned after the campaign's last task: one
    task for each mechanism the benchmark ran, at the benchmark's next process execution. None when the budget
    does not replace dropped blocks, or the study has no baseline to take a ratio to."""
    if not options.replace_dropped or baseline is None:
        return []
    planned = store.planned(campaign_id)
    result = analyse(store, campaign_id, seed=options.seed)
    tasks: list[Task] = []
    seq = max(t.seq for t in planned) + 1
    for benchmark in short(result, planned, options.process_executions, baseline):
        mine = [t for t in planned if t.benchmark == benchmark]
        pexec = max(t.pexec for t in mine) + 1
        for mechanism in dict.fromkeys(t.mechanism for t in mine):
            tasks.append(Task(seq + len(tasks), benchmark, mechanism, pexec))
    return tasks
