"""The terminal report of a campaign's analysis (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from bridgebench.report import markdown, tables
from bridgebench.result import Analysis


def _table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))  # data, not markup
    return table


def print_table(console: Console, title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """A table as rich draws it; or, written to a pipe or a file where it would not fit, as markdown: one
    line a row, never a cell folded over lines (a log reader greps rows)."""
    table = _table(title, columns, rows)
    unbounded = console.options.update_width(1_000_000)  # measured at the width it wants, not the console's
    if console.is_terminal or Measurement.get(console, unbounded, table).maximum <= console.width:
        console.print(table)
        return
    console.print(escape(title), highlight=False, soft_wrap=True)
    for line in markdown.table(columns, rows):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _say(console: Console, line: str | None, style: str | None = None) -> None:
    if line:
        console.print(escape(line), style=style, highlight=False, soft_wrap=True)


def show(result: Analysis, console: Console) -> None:
    for i, line in enumerate(tables.headline_lines(result)):  # the answer first
        _say(console, line, "bold" if i == 0 else None)
    _say(console, tables.budget_line(result), "dim")
    _say(console, tables.metric_line(result), "dim")
    _say(console, tables.disturbance_line(result), "yellow")
    _say(console, tables.adaptive_line(result), "dim")
    _say(console, tables.few_executions_line(result), "yellow")
    base = result.baseline
    title = "Steady state per benchmark × mechanism" + (f" (ratio to {base})" if base else "")
    print_table(console, title, tables.columns(result), tables.cell_rows(result))
    workloads = tables.workload_rows(result)
    if workloads:
        print_table(console, "What each benchmark ran", tables.WORKLOAD_COLUMNS, workloads)
    if result.geomean_ratio:
        print_table(console, tables.geomean_title(result, base), ("Mechanism", "Geomean"),
                     tables.geomean_rows(result))
    jit = tables.jit_rows(result)
    if jit:
        print_table(console, "What LuaJIT's compiler did (per cell, over its executions)", tables.JIT_COLUMNS, jit)
    _say(console, tables.beside_line(result), "dim")
    beside = tables.beside_rows(result)
    if beside:
        print_table(console, "Counts beside time (ratio to the baseline in each)", tables.BESIDE_COLUMNS, beside)
    unsettled = tables.unsettled_rows(result)
    if unsettled:
        print_table(console, "Not settled by the adaptive budget", ("Benchmark", "Mechanism", "State", "Why"),
                     unsettled)
    unavailable = tables.unavailable_rows(result)
    if unavailable:
        print_table(console, "Unavailable mechanisms", ("Mechanism", "Reason"), unavailable)
    problems = tables.check_problems(result)
    if problems:
        print_table(console, "Answer check problems", ("Benchmark", "Mechanism", "Status", "Detail"), problems)
    if result.machines:
        print_table(console, "Machines", tables.MACHINE_COLUMNS, tables.machine_rows(result))
        print_table(console, "Per machine", tables.MACHINE_CELL_COLUMNS, tables.machine_cell_rows(result))
