"""The terminal report of a campaign's analysis (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from bridgebench.report import speed
from bridgebench.report.terminal import fits, grid, print_table, rich_table
from bridgebench.timing.report import tables
from bridgebench.timing.result import Analysis


def print_grid(console: Console, result: Analysis) -> None:
    """The verdicts at a glance, as many mechanisms as the terminal's width holds (the headline's first),
    naming those left out: a row never wraps."""
    columns, rows = tables.verdict_grid(result)
    shown = len(columns)
    table = grid(columns, rows)
    while shown > 2 and not fits(console, table):
        shown -= 1
        table = grid(columns[:shown], [r[:shown] for r in rows])
    console.print(table)
    if shown < len(columns):
        _say(console, f"not shown at this width: {', '.join(columns[shown:])} (their counts are above; `--wide` "
                      "shows every table whole)", "dim")


def _say(console: Console, line: str | None, style: str | None = None) -> None:
    """A line: wrapped at words on a terminal, one line in a pipe or a file (a log reader greps it)."""
    if line:
        console.print(escape(line), style=style, highlight=False, soft_wrap=not console.is_terminal)


def show(result: Analysis, console: Console, wide: bool = False) -> None:
    """The answer first. On a terminal, unless `wide`: each benchmark's verdict for as many mechanisms as
    fit, then the details in lines, and a table only where it fits, else a line that says where it is (the
    report files have them all); written to a pipe or a file, every table whole."""
    compact = console.is_terminal and not wide

    def table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]], what: str = "") -> None:
        if not rows:
            return
        if compact and not fits(console, rich_table(title, columns, rows)):
            _say(console, f"{what or title}: too wide for this terminal; `--wide`, or the report files", "dim")
        else:
            print_table(console, title, columns, rows)

    for i, line in enumerate(tables.headline_lines(result)):
        _say(console, line, "bold" if i == 0 else None)
    if compact and result.baseline:
        print_grid(console, result)
    _say(console, tables.budget_line(result), "dim")
    _say(console, tables.metric_line(result), "dim")
    _say(console, tables.disturbance_line(result), "yellow")
    _say(console, tables.adaptive_line(result), "dim")
    _say(console, tables.more_time_line(result), None)
    _say(console, tables.replaced_note(result), "dim")
    _say(console, tables.few_executions_line(result), "yellow")
    _say(console, tables.unseparated_line(result), "yellow")
    _say(console, tables.per_call_line(result), "dim")
    _say(console, speed.line(result.campaign), "yellow" if speed.warning(result.campaign) else "dim")
    base = result.baseline
    table("Steady state per benchmark × mechanism" + (f" (ratio to {base})" if base else ""),
          tables.columns(result), tables.cell_rows(result),
          "the steady state per cell (class, steady iteration, performance and ratio with their intervals)")
    _say(console, tables.drift_note(result), "yellow")
    table("What each benchmark ran", tables.WORKLOAD_COLUMNS, tables.workload_rows(result))
    if result.geomean_ratio:
        table(tables.geomean_title(result, base), ("Mechanism", "Geomean"), tables.geomean_rows(result))
    table("What LuaJIT's compiler did (per cell, over its executions)", tables.JIT_COLUMNS, tables.jit_rows(result))
    _say(console, tables.beside_line(result), "dim")
    table("Counts beside time (ratio to the baseline in each)", tables.BESIDE_COLUMNS, tables.beside_rows(result))
    unsettled = tables.unsettled_rows(result)
    if unsettled and compact:
        _say(console, f"{len(unsettled)} cell{'s' if len(unsettled) != 1 else ''} not settled by the adaptive "
                      "budget: why, cell by cell, in the report files (or `--wide`)", "yellow")
    else:
        table("Not settled by the adaptive budget", ("Benchmark", "Mechanism", "State", "Why"), unsettled)
    # what went wrong is shown whatever the width (folded, if need be)
    for title, columns, rows in (("Unavailable mechanisms", ("Mechanism", "Reason"), tables.unavailable_rows(result)),
                                 ("Answer check problems", ("Benchmark", "Mechanism", "Status", "Detail"),
                                  tables.check_problems(result))):
        if rows:
            print_table(console, title, columns, rows)
    if result.machines:
        table("Machines", tables.MACHINE_COLUMNS, tables.machine_rows(result))
        table("Per machine", tables.MACHINE_CELL_COLUMNS, tables.machine_cell_rows(result))
