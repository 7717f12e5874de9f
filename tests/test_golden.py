"""Golden files: every renderer of a campaign report (terminal, markdown, JSON, HTML, CSV, Go benchmark
format) and of a diff, from one fixture campaign, and of a load campaign's report from a recorded analysis,
compared with the files in tests/golden byte for byte.

A change to a renderer shows up here as a diff of its output. When the change is meant, write the files
again and review them like code:

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_golden.py
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from bridgebench.loadtest import report as load_report
from bridgebench.loadtest.result import LoadAnalysis
from bridgebench.timing import report
from bridgebench.timing.analysis import Series, analyse
from bridgebench.timing.diff_sides import compare
from bridgebench.timing.report import diff as diff_report
from bridgebench.timing.report import terminal
from bridgebench.timing.result import Analysis
from tests.conftest import make_campaign

GOLDEN = Path(__file__).parent / "golden"
SUFFIX = {"markdown": "md", "json": "json", "html": "html", "csv": "csv", "gobench": "txt"}


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Series, Analysis]:
    # Three process executions a cell, but one crashes: "n body" on lua/jit has two, so the files show an
    # estimate with no interval (too few process executions) beside cells with one.
    store, cid = make_campaign(tmp_path_factory.mktemp("golden") / "s.sqlite", pexecs=3, iterations=120)
    result = analyse(store, cid)
    # the campaign's clock times are the only thing that differs from one creation to the next
    return Series(store), replace(result, campaign=replace(result.campaign, created=1.7e9, finished=1.7e9 + 60))


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with UPDATE_GOLDEN=1 to write it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from the golden file"


def terminal_text(show: object, width: int = 200, terminal: bool = False) -> str:
    """What `show` prints: written to a pipe or a file (200 columns, the default), or on a terminal of
    `width` columns (without colour, so that the file is plain text)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=terminal)
    show(console)  # type: ignore[operator]
    return buffer.getvalue()


@pytest.mark.parametrize("format_", list(report.FORMATS))
def test_report_formats_match_their_golden_files(fixture: tuple[Series, Analysis], format_: str) -> None:
    series, result = fixture
    check(f"report.{SUFFIX[format_]}", report.render(format_, result, series))


def test_terminal_report_matches_its_golden_file(fixture: tuple[Series, Analysis]) -> None:
    _, result = fixture
    check("report.terminal.txt", terminal_text(lambda console: terminal.show(result, console)))


@pytest.mark.parametrize("format_", [f for f in diff_report.FORMATS if f != "terminal"])
def test_diff_formats_match_their_golden_files(fixture: tuple[Series, Analysis], format_: str) -> None:
    series, result = fixture
    comparisons, header = compare(series.store, result.campaign.id, "cpython", result.campaign.id, "lua/jit")
    check(f"diff.{SUFFIX[format_]}", diff_report.render(format_, comparisons, header))


@pytest.mark.parametrize("width", [80, 120])
def test_the_terminal_report_at_80_and_120_columns_matches_its_golden_file(fixture: tuple[Series, Analysis],
                                                                           width: int) -> None:
    """On a terminal: each benchmark's verdict on one line first, tables that do not fit left to the report
    files with a line that says so; a new column cannot wrap a row unnoticed."""
    _, result = fixture
    text = terminal_text(lambda console: terminal.show(result, console), width, terminal=True)
    check(f"report.terminal-{width}.txt", text)
    assert all(len(line) <= width for line in text.splitlines())


def test_terminal_diff_matches_its_golden_file(fixture: tuple[Series, Analysis]) -> None:
    series, result = fixture
    comparisons, header = compare(series.store, result.campaign.id, "cpython", result.campaign.id, "lua/jit")
    check("diff.terminal.txt", terminal_text(lambda console: diff_report.show(comparisons, header, console)))


# --- a load campaign's report, from a recorded analysis ---------------------------------------------------
# tests/fixtures/load-analysis.json is the analysis of a real quick load campaign of tests/fixtures/study-load
# (its Go driver's merged histograms included), so these files need neither Go nor a server to render.
LOAD_FIXTURE = Path(__file__).parent / "fixtures" / "load-analysis.json"


@pytest.fixture(scope="module")
def load_result() -> LoadAnalysis:
    return LoadAnalysis.from_json(json.loads(LOAD_FIXTURE.read_text()))


def test_the_recorded_load_analysis_round_trips(load_result: LoadAnalysis) -> None:
    assert LoadAnalysis.from_json(json.loads(json.dumps(load_result.to_json()))) == load_result
    assert all(isinstance(c.per_execution, tuple) and c.ok == len(c.per_execution) for c in load_result.cells)


@pytest.mark.parametrize("format_", list(load_report.FORMATS))
def test_load_report_formats_match_their_golden_files(load_result: LoadAnalysis, format_: str) -> None:
    check(f"load.{load_report.SUFFIXES[format_]}", load_report.FORMATS[format_](load_result))


def test_load_terminal_report_matches_its_golden_file(load_result: LoadAnalysis) -> None:
    check("load.terminal.txt", terminal_text(lambda console: load_report.show(load_result, console)))


@pytest.mark.parametrize("width", [80, 120])
def test_the_load_and_diff_terminal_views_at_80_and_120_columns_match_their_golden_files(
        fixture: tuple[Series, Analysis], load_result: LoadAnalysis, width: int) -> None:
    series, result = fixture
    comparisons, header = compare(series.store, result.campaign.id, "cpython", result.campaign.id, "lua/jit")
    for name, show in (("load", lambda console: load_report.show(load_result, console)),
                       ("diff", lambda console: diff_report.show(comparisons, header, console))):
        check(f"{name}.terminal-{width}.txt", terminal_text(show, width, terminal=True))


@pytest.mark.parametrize(("seconds", "shown"), [(0.99996, "1 s"), (0.0009999, "1 ms"), (0.0123456, "12.3 ms"),
                                                (1.5e-6, "1.5 µs"), (9999.6, "10000 s")])
def test_a_duration_is_rounded_before_its_unit_is_chosen(seconds: float, shown: str) -> None:
    from bridgebench.report.fmt import duration

    assert duration(seconds) == shown  # never "1e+03 ms"
