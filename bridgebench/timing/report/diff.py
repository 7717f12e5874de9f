"""Render a differ result: terminal, markdown, JSON and a self-contained HTML page share the rows."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bridgebench.instructions import INSTRUCTIONS
from bridgebench.report import fmt, svg, terminal
from bridgebench.report import markdown as md
from bridgebench.timing.diff_rules import Comparison, overall
from bridgebench.timing.report import html

COLUMNS = ("Benchmark", "A", "B", "Verdict", "Steady perf A", "Steady perf B", "B/A (99% CI)",
           "Steady iter # A", "Steady iter # B", "B steady", "Classes A", "Classes B", "Why")
# What a narrow terminal or a pipe shows: one short line a benchmark, the reasons listed below the table.
COMPACT = ("Benchmark", "A vs B", "Verdict", "B/A (99% CI)", "B steady")
WIDE_ENOUGH = 180  # columns a terminal needs for the whole table without wrapping every cell
STYLE = {"faster": "green", "slower": "red", "different": "yellow", "equivalent": "", "undecided": "dim"}
FORMATS = ("terminal", "markdown", "json", "html")


def rows(comparisons: list[Comparison]) -> list[tuple[str, ...]]:
    return [(c.benchmark, c.a, c.b, c.verdict, fmt.estimate(c.perf_a, c.metric), fmt.estimate(c.perf_b, c.metric),
             fmt.ratio(c.ratio, precise=c.metric == INSTRUCTIONS),
             fmt.spread(c.steady_iteration_a), fmt.spread(c.steady_iteration_b), c.warmup_verdict, c.classes_a,
             c.classes_b, c.reason) for c in comparisons]


def _compact(row: tuple[str, ...]) -> tuple[str, ...]:
    return row[0], f"{row[1]} vs {row[2]}", row[3], row[6], row[9]


def show(comparisons: list[Comparison], header: str, console: Console) -> None:
    """Wide terminals get every column; narrower ones and pipes one short row a benchmark (on a terminal
    without borders where that fits, and without the sides when every row compares the same two), then
    each row's reasons in words, wrapped at words on a terminal, one line each in a pipe."""
    console.print(escape(header), style="dim", highlight=False, soft_wrap=not console.is_terminal)
    wide = console.is_terminal and console.width >= WIDE_ENOUGH
    styles = [STYLE.get(c.verdict, "") for c in comparisons]
    full = rows(comparisons)
    compact = [_compact(row) for row in full]
    one_pair = len({(c.a, c.b) for c in comparisons}) == 1
    shown = [(r[0], *r[2:]) for r in compact] if one_pair else compact
    columns = (COMPACT[0], *COMPACT[2:]) if one_pair else COMPACT
    title = f"Differ: {comparisons[0].a} vs {comparisons[0].b}" if one_pair and comparisons else "Differ"
    if wide or not terminal.print_rows(console, title, columns, shown, styles):
        table = Table(title="Differ", title_justify="left")
        for column in COLUMNS if wide else COMPACT:
            table.add_column(column, overflow="fold")
        for style, row, short in zip(styles, full, compact, strict=True):
            table.add_row(*(escape(cell) for cell in (row if wide else short)), style=style)
        console.print(table)
    if not wide:
        for c in comparisons:
            line = (f"  {c.benchmark} ({c.a} vs {c.b}): {c.verdict}: {c.reason}; A {fmt.estimate(c.perf_a, c.metric)}, "
                    f"B {fmt.estimate(c.perf_b, c.metric)}; classes A {c.classes_a}, B {c.classes_b}")
            console.print(escape(line), highlight=False, soft_wrap=not console.is_terminal)
        console.print("(every column: `--format markdown` or `--format html`)", style="dim", highlight=False)
    console.print(f"overall: {overall(comparisons)}", highlight=False)


def as_json(comparisons: list[Comparison], header: str) -> dict[str, Any]:
    return {"header": header, "overall": overall(comparisons), "comparisons": [asdict(c) for c in comparisons]}


CHANGED = ("faster", "slower", "different")  # what a pull request's summary lists first
SUMMARY_COLUMNS = ("Benchmark", "Verdict", "B/A (99% CI)", "A vs B", "Why")


def markdown(comparisons: list[Comparison], header: str) -> str:
    """Fit for a CI job's summary or a pull request's comment: the verdict counts first, then only what
    changed (faster, slower, different), each with its interval, then every benchmark and every column in
    a collapsed section."""
    changed = [(c, r) for c, r in zip(comparisons, rows(comparisons), strict=True) if c.verdict in CHANGED]
    n = len(comparisons)
    out = ["# bridgebench diff", "", f"**Overall:** {overall(comparisons)} (of {n} benchmark{'s' if n != 1 else ''})",
           "", header, ""]
    if changed:
        out += ["## What changed", "", *md.table(SUMMARY_COLUMNS, [(r[0], r[3], r[6], f"{r[1]} vs {r[2]}", r[12])
                                                                  for _, r in changed])]
    else:
        out += ["Nothing changed: no benchmark is faster, slower or different.", ""]
    out += ["<details><summary>Every benchmark, every column</summary>", "", *md.table(COLUMNS, rows(comparisons)),
            "</details>", ""]
    return "\n".join(out)


def html_page(comparisons: list[Comparison], header: str) -> str:
    chart = html.ratio_chart([(f"{c.benchmark} ({c.a} vs {c.b})", c.ratio, html.VERDICT_COLOUR.get(c.verdict, "#555"),
                               f"{c.verdict}: {fmt.ratio(c.ratio)}") for c in comparisons],
                             label="Ratio B/A of steady performance per benchmark, with its 99% CI")
    verdicts = html.table(COLUMNS, rows(comparisons),
                          row_style=lambda k: f"color:{html.VERDICT_COLOUR.get(comparisons[k].verdict, '#222')}")
    body = (f"<header><h1>bridgebench diff</h1><p class=\"budget\">{svg.escape(header)}</p>"
            f"<p><strong>Overall:</strong> {svg.escape(overall(comparisons))}</p></header>"
            '<section id="ratios"><h2>Ratio B/A per benchmark</h2><p class="note">Dot: the ratio of steady '
            "performance (above 1: B is slower); whisker: its 99% CI (two-level bootstrap; "
            "paired by round when both ran in 5 or more rounds of one campaign); dashed: no difference.</p>"
            f"{chart}</section>"
            f'<section id="verdicts"><h2>Verdicts</h2>{verdicts}</section>')
    return html.page("bridgebench diff", body)


def render(format_: str, comparisons: list[Comparison], header: str) -> str:
    """The diff as text in a file format (everything but the terminal)."""
    if format_ == "json":
        return json.dumps(as_json(comparisons, header), indent=2, default=str) + "\n"
    if format_ == "markdown":
        return markdown(comparisons, header)
    return html_page(comparisons, header)
