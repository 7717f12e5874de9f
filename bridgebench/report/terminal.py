"""The terminal kit (rich): tables that fit the terminal's width or say where the rest is, for every kind's
report and the commands' own tables."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from bridgebench.report import markdown


def rich_table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))  # data, not markup
    return table


def print_table(console: Console, title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """A table as rich draws it; or, written to a pipe or a file where it would not fit, as markdown: one
    line a row, never a cell folded over lines (a log reader greps rows)."""
    table = rich_table(title, columns, rows)
    if console.is_terminal or fits(console, table):
        console.print(table)
        return
    console.print(escape(title), highlight=False, soft_wrap=True)
    for line in markdown.table(columns, rows):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def fits(console: Console, table: Table) -> bool:
    """Whether the table, measured at the width it wants (not the console's), fits the console's width."""
    unbounded = console.options.update_width(1_000_000)
    return Measurement.get(console, unbounded, table).maximum <= console.width


def grid(columns: tuple[str, ...], rows: list[tuple[str, ...]], title: str | None = None,
          styles: list[str] | None = None) -> Table:
    """A table without borders, one line a row (a cell never wraps): what fits 80 columns best."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  padding=(0, 1, 0, 0))  # with the box's blank divider: two spaces between columns
    for column in columns:
        table.add_column(column, no_wrap=True)
    for i, row in enumerate(rows):
        table.add_row(*(escape(cell) for cell in row), style=styles[i] if styles else None)
    return table


def print_rows(console: Console, title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]],
               styles: list[str] | None = None) -> bool:
    """On a terminal, a table without borders where that fits its width, one line a row (True); otherwise
    nothing (False): the caller prints it another way."""
    if console.is_terminal and fits(console, table := grid(columns, rows, title, styles)):
        console.print(table)
        return True
    return False
