"""The HTML report: self-contained, escaped, one plot per process execution, and it renders in a real
browser (headless Chromium; skipped when Chromium is not installed)."""

from __future__ import annotations

import html
import re
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bridgebench import question
from bridgebench.result import CheckAnswer
from bridgebench.runner import OK
from bridgebench.timing.analysis import Series, analyse
from bridgebench.timing.report.html import VERDICT_COLOUR, render
from bridgebench.timing.result import Analysis
from tests.conftest import EVIL, analysed, chromium, make_campaign


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def write_report(tmp_path: Path, **kwargs: Any) -> tuple[Series, Analysis, Path]:
    series, result = analysed(tmp_path, **kwargs)
    page = tmp_path / "report.html"
    page.write_text(render(result, series), encoding="utf-8")
    return series, result, page


def ok_executions(series: Series, result: Analysis) -> int:
    return sum(e.status == OK for e in series.store.executions(result.campaign.id))


# --- in a browser ------------------------------------------------------------------------------------
def test_report_renders_in_chromium_with_a_plot_per_execution(tmp_path: Path) -> None:
    series, result, page = write_report(tmp_path)
    dom = chromium(page, "--dump-dom").stdout
    executions = ok_executions(series, result)
    assert executions == 11
    assert dom.count("<svg") >= executions + len(result.benchmarks)  # run plots + comparison charts
    assert len(re.findall(r"<polyline ", dom)) == executions
    for text in ("bridgebench: synthetic, campaign 1", "Steady state per benchmark \u00d7 mechanism",
                 "fib, CPYTHON, process execution #1", "n body, LUA/JIT, process execution #2",
                 "Unavailable mechanisms", "not found: gone-vm", "Failed process executions",
                 "exit status 1: boom", "Test  CPU @ 3.00GHz", "cpython 1.0", "Run-sequence plots"):
        assert html.escape(text, quote=False) in dom, text
    # The planted script reached the browser as text, not as an element.
    assert "<script" not in dom.lower()
    assert "&lt;script&gt;alert('owned')&lt;/script&gt;" in dom


def test_the_verdicts_come_first_as_a_forest_plot_with_one_mark_per_ratio(tmp_path: Path) -> None:
    """Before anything else, per mechanism against the baseline: each benchmark's ratio as a dot coloured by
    its verdict, with its interval, the equivalence margin shaded; the browser renders it without an error."""
    _, result, page = write_report(tmp_path, mechanisms=("cpython", "lua/jit", "luajit2"))
    done = chromium(page, "--dump-dom", "--enable-logging=stderr", "--v=0")
    dom = done.stdout
    assert "CONSOLE" not in done.stderr and "Uncaught" not in done.stderr
    section = dom[dom.index('<section id="verdicts">'):]
    section = section[:section.index("</section>")]
    assert dom.index('<section id="verdicts">') < dom.index('<section id="summary">')
    ratios = [c for c in result.cells if c.mechanism != result.baseline and c.ratio]
    assert section.count('class="ratio"') == len(ratios) == 4
    assert section.count('class="margin"') == 2  # one chart per mechanism, each with the ±2 % band
    for cell in ratios:
        state = question.answer(cell.ratio, result.equivalence).state
        assert f'fill="{VERDICT_COLOUR[state]}"' in section
    assert section.index("LUA/JIT") < section.index("LUAJIT2")  # in the order of the study file


def test_report_screenshot_is_not_blank(tmp_path: Path) -> None:
    _, _, page = write_report(tmp_path)
    shot, blank_shot = tmp_path / "report.png", tmp_path / "blank.png"
    chromium(page, f"--screenshot={shot}", "--window-size=1400,3000")
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body><p>x</p></body></html>")
    chromium(blank, f"--screenshot={blank_shot}", "--window-size=1400,3000")
    assert png_size(shot) == png_size(blank_shot) == (1400, 3000)
    # Tables and plots compress far worse than white space: the same-sized screenshot of an empty page is
    # ~20 KB, the report's several times that.
    assert shot.stat().st_size > 4 * blank_shot.stat().st_size


# --- the page itself ---------------------------------------------------------------------------------
def test_report_is_self_contained_and_escapes_data(tmp_path: Path) -> None:
    series, result, page = write_report(tmp_path)
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"https?://", text)
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", text, re.IGNORECASE)
    assert not re.search(r"\b(src|href)=\"(?!#)", text)  # only in-page links
    assert EVIL not in text
    assert html.escape(EVIL) in text
    forests = len([m for m in result.mechanisms if m.available and m.mechanism != result.baseline])
    assert text.count("<figure") == ok_executions(series, result) + len(result.benchmarks) + forests
    # Every plot is titled as in warmup_stats: benchmark, mechanism, process execution #N (class).
    titles = re.findall(r"<figcaption>([^<]*process execution #\d+ \([^)]*\))", text)
    assert len(titles) == ok_executions(series, result)
    assert "fib, CPYTHON, process execution #3 (" in text


def test_changepoints_steady_state_and_outliers_are_drawn(tmp_path: Path) -> None:
    _, result, page = write_report(tmp_path)
    text = page.read_text(encoding="utf-8")
    runs = [r for c in result.cells for r in c.per_execution]
    changepoints = sum(len(r.changepoints) for r in runs)
    assert changepoints > 0  # the warm-ups were found
    assert text.count('stroke-dasharray="4 3"') == changepoints
    assert text.count('fill-opacity="0.09"') == sum(r.steady_start is not None for r in runs)
    # the outliers the analysis left out are marked, in range (circle) or beyond it (triangle)
    marked = len(re.findall(r'<circle [^>]*stroke="#d32f2f"', text)) + text.count('h6z" fill="#d32f2f"')
    assert marked == sum(len(r.outliers) for r in runs) > 0


def test_short_or_unfinished_campaigns_render_without_classes(tmp_path: Path) -> None:
    series, result = analysed(tmp_path, iterations=12, stop_after=3)
    assert result.campaign.state == "running"
    page = render(result, series)
    assert "not classified" in page
    assert "no successful process execution to plot" in page  # cells not reached yet
    assert page.count("<polyline ") == ok_executions(series, result) == 3


def test_long_series_are_downsampled() -> None:
    from bridgebench.timing.report.html import MARGIN_T, PLOT_W, line_plot

    rng = np.random.default_rng(0)
    ys = rng.normal(1e-3, 1e-5, 100_000)
    ys[50_000] = 5e-3
    svg = line_plot(ys, label="long", changepoints=[20_000])
    points = re.search(r'<polyline points="([^"]*)"', svg)
    assert points is not None
    assert len(points.group(1).split()) <= 2 * PLOT_W
    assert len(svg) < 25_000
    # The spike survives the min/max buckets: the line reaches the top edge (SVG y grows downwards), where
    # a triangle says the point is beyond the plotted range, which fits the bulk of the points.
    top = min(float(p.split(",")[1]) for p in points.group(1).split())
    assert top == pytest.approx(MARGIN_T)
    assert svg.count('h6z" fill="#555"') == 1
    ticks = [float(t) for t in re.findall(r'text-anchor="end">([0-9.]+)</text>', svg)]
    assert ticks and max(ticks) < 1.5  # in ms: the axis fits the bulk (~1 ms), not the 5 ms spike


def test_nice_ticks() -> None:
    from bridgebench.report.svg import nice_ticks

    assert nice_ticks(0, 1) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert nice_ticks(1.43, 2.51) == pytest.approx([1.6, 1.8, 2.0, 2.2, 2.4])
    assert nice_ticks(-0.05, 0.3) == pytest.approx([0, 0.1, 0.2, 0.3])
    assert nice_ticks(1, 300)[-1] == 300
    assert nice_ticks(3, 3) == [3]


def test_machine_section_lists_environment_versions_and_options(tmp_path: Path) -> None:
    """The machine section lists every environment key, the mechanism versions and the options; answer
    check problems get their own table."""
    store, cid = make_campaign(tmp_path / "s.sqlite", pexecs=1, iterations=60, crash=False)
    series = Series(store)
    result = analyse(store, cid)
    result.campaign.environment["odd & new"] = "<b>value</b>"
    assert "Answer check problems" not in render(result, series)
    result = replace(result, check=(*result.check, CheckAnswer("fib", "cpython", "disagrees", "<41>", "", None)))
    page = render(result, series)
    assert "Answer check problems" in page and "disagrees" in page and "&lt;41&gt;" in page
    assert "odd &amp; new" in page and "&lt;b&gt;value&lt;/b&gt;" in page
    assert "gone-vm" in page and "cpython 1.0" in page and "process_executions" in page


def test_every_report_describes_the_campaign_that_ran_not_its_budgets_start(tmp_path: Path) -> None:
    # An adaptive campaign (3 to 12 executions a cell) whose iterations were sized per cell (5 to 50): the HTML
    # report's method line says so in the markdown's words, not "3 process executions × 50 iterations".
    from dataclasses import replace

    from bridgebench.timing.report import html as html_report
    from bridgebench.timing.report import markdown
    from tests.conftest import analysed

    series, result = analysed(tmp_path)
    options = {**result.campaign.options, "until_ci": 0.02, "max_process_executions": 12, "execution_s": 1.0,
               "min_iterations": 5, "iterations": 50}
    check = tuple(replace(r, iterations=n) for r, n in zip(result.check, (5, 50, 17, 50), strict=False))
    adaptive = replace(result, campaign=replace(result.campaign, options=options), check=check)
    said = "3–12 (adaptive) process executions × 5–50 iterations (sized per cell to about 1 s an execution"
    assert said in markdown.render(adaptive)
    assert said in html.unescape(html_report.render(adaptive, series))
