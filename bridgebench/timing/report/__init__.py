"""Reports of a campaign's analysis. The terminal shows it with rich (terminal.show); every file format is a
renderer in FORMATS, a function of the analysis result and its stored series (for those that draw or export
iterations), and nothing else."""

from __future__ import annotations

import json
from collections.abc import Callable

from bridgebench.timing.analysis import Series
from bridgebench.timing.report import exports, html, markdown
from bridgebench.timing.result import Analysis

Renderer = Callable[[Analysis, Series], str]

FORMATS: dict[str, Renderer] = {
    "markdown": lambda result, _: markdown.render(result),
    "json": lambda result, _: json.dumps(result.to_json(), indent=2),
    "html": html.render,
    "csv": exports.csv_text,
    "gobench": exports.go_bench_text,
}
WRITTEN_AFTER_A_RUN = {"markdown": "md", "json": "json", "html": "html"}  # format -> file suffix


def render(format_: str, result: Analysis, series: Series) -> str:
    """The analysis as text in a file format, ending in one newline."""
    return FORMATS[format_](result, series).rstrip("\n") + "\n"
