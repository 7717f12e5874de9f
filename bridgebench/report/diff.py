"""Render a differ result (terminal and markdown share the rows)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bridgebench.differ import Comparison, overall
from bridgebench.report import fmt

COLUMNS = ("Benchmark", "A", "B", "Verdict", "Steady perf A", "Steady perf B", "B/A (99% CI)",
           "Steady iter # A", "Steady iter # B", "B steady", "Classes A", "Classes B", "Why")
STYLE = {"improved": "green", "worsened": "red", "different": "yellow", "unchanged": ""}


def rows(comparisons: list[Comparison]) -> list[tuple[str, ...]]:
    return [(c.benchmark, c.a, c.b, c.verdict, fmt.estimate(c.perf_a), fmt.estimate(c.perf_b), fmt.ratio(c.ratio),
             fmt.spread(c.steady_iteration_a), fmt.spread(c.steady_iteration_b), c.warmup_verdict, c.classes_a,
             c.classes_b, c.reason) for c in comparisons]


def show(comparisons: list[Comparison], header: str, console: Console) -> None:
    console.print(escape(header), style="dim", highlight=False)
    table = Table(title="Differ", title_justify="left")
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for c, row in zip(comparisons, rows(comparisons), strict=True):
        table.add_row(*(escape(cell) for cell in row), style=STYLE.get(c.verdict, ""))
    console.print(table)
    console.print(f"overall: {overall(comparisons)}", highlight=False)


def as_json(comparisons: list[Comparison], header: str) -> dict[str, Any]:
    return {"header": header, "overall": overall(comparisons), "comparisons": [c.__dict__ for c in comparisons]}
