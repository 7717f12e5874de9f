"""The terminal report of a campaign's analysis (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bridgebench.report import tables
from bridgebench.result import Analysis


def _table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))  # data, not markup
    return table


def show(result: Analysis, console: Console) -> None:
    console.print(escape(tables.budget_line(result)), style="dim")
    warning = tables.disturbance_line(result)
    if warning:
        console.print(escape(warning), style="yellow", highlight=False)
    adaptive = tables.adaptive_line(result)
    if adaptive:
        console.print(escape(adaptive), style="dim", highlight=False)
    few = tables.few_executions_line(result)
    if few:
        console.print(escape(few), style="yellow", highlight=False)
    base = result.baseline
    title = "Steady state per benchmark × mechanism" + (f" (ratio to {base})" if base else "")
    console.print(_table(title, tables.columns(result), tables.cell_rows(result)))
    workloads = tables.workload_rows(result)
    if workloads:
        console.print(_table("What each benchmark ran", tables.WORKLOAD_COLUMNS, workloads))
    if result.geomean_ratio:
        console.print(_table(tables.geomean_title(result, base), ("Mechanism", "Geomean"),
                             tables.geomean_rows(result)))
    unsettled = tables.unsettled_rows(result)
    if unsettled:
        console.print(_table("Not settled by the adaptive budget", ("Benchmark", "Mechanism", "State", "Why"),
                             unsettled))
    unavailable = tables.unavailable_rows(result)
    if unavailable:
        console.print(_table("Unavailable mechanisms", ("Mechanism", "Reason"), unavailable))
    problems = tables.check_problems(result)
    if problems:
        console.print(_table("Answer check problems", ("Benchmark", "Mechanism", "Status", "Detail"), problems))
    if result.machines:
        console.print(_table("Machines", tables.MACHINE_COLUMNS, tables.machine_rows(result)))
        console.print(_table("Per machine", tables.MACHINE_CELL_COLUMNS, tables.machine_cell_rows(result)))
