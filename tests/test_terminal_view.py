"""The terminal's first screen (timing/report/terminal.py): the headline, then each benchmark's verdict on one line
for as many mechanisms as the width holds, the headline mechanism's first; what does not fit is named, and
`--wide` prints every table whole. Piped, every table is printed whole, as markdown where it would not fit."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from bridgebench.timing.analysis import analyse
from bridgebench.timing.report import terminal
from bridgebench.timing.result import Analysis
from tests.conftest import make_campaign

BENCHMARKS = ("binarytrees", "spectralnorm", "knucleotide", "mandelbrot")
MECHANISMS = ("luajit", "lua51", "lua54", "luajit2", "luajit-joff", "luajit-record")


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    store, cid = make_campaign(tmp_path_factory.mktemp("many") / "s.sqlite", benchmarks=BENCHMARKS,
                               mechanisms=MECHANISMS, pexecs=3, iterations=40, crash=False)
    return analyse(store, cid)


def shown(result: Analysis, width: int, terminal_: bool = True, wide: bool = False) -> list[str]:
    buffer = io.StringIO()
    terminal.show(result, Console(file=buffer, width=width, color_system=None, force_terminal=terminal_), wide)
    return buffer.getvalue().splitlines()


def test_at_80_columns_every_benchmark_verdict_is_one_line_near_the_top(many: Analysis) -> None:
    lines = shown(many, 80)
    assert all(len(line) <= 80 for line in lines)
    header = next(i for i, line in enumerate(lines) if line.startswith("Benchmark "))
    assert header <= len(MECHANISMS)  # after the headline's lines, one a mechanism
    rows = lines[header + 2:header + 2 + len(BENCHMARKS)]
    assert [row.split()[0] for row in rows] == list(BENCHMARKS)  # one line a benchmark: no cell wrapped
    assert all(any(word in row for word in ("slower ×", "faster ×", "equivalent ×", "undecided ×")) for row in rows)
    columns = lines[header].split()[1:]
    assert 2 <= len(columns) < len(MECHANISMS) - 1 and columns == list(MECHANISMS[1:1 + len(columns)])
    left_out = next(line for line in lines if line.startswith("not shown at this width: "))
    assert all(m in left_out for m in MECHANISMS[1 + len(columns):])
    assert any("too wide for this terminal; `--wide`" in line for line in lines)  # the full table's pointer


def test_a_wider_terminal_shows_more_mechanisms_and_wide_shows_every_table(many: Analysis) -> None:
    at_200 = shown(many, 200)
    header = next(line for line in at_200 if line.startswith("Benchmark "))
    assert header.split()[1:] == list(MECHANISMS[1:])
    assert not any(line.startswith("not shown at this width") for line in at_200)
    wide = shown(many, 80, wide=True)
    assert not any(line.startswith("Benchmark ") for line in wide)  # no grid: the full table instead
    assert any("Steady state per benchmark" in line for line in wide)
    assert not any("too wide for this terminal" in line for line in wide)


def test_piped_output_is_every_table_whole_one_line_a_row(many: Analysis) -> None:
    lines = shown(many, 80, terminal_=False)
    assert not any(line.startswith("Benchmark ") for line in lines)
    table = [line for line in lines if line.startswith("| ") and line.split("|")[1].strip() in BENCHMARKS]
    assert len(table) == len(BENCHMARKS) * len(MECHANISMS)


@pytest.mark.parametrize("command", ["run", "analyse", "report"])
def test_the_commands_that_show_a_campaign_take_wide(tmp_path: Path, command: str) -> None:
    from tests.conftest import bridgebench

    done = bridgebench(command, "--help", cwd=tmp_path, env={"COLUMNS": "200"})
    assert done.returncode == 0 and "--wide" in done.stdout


def test_the_selftest_table_fits_80_columns_one_line_a_check() -> None:
    from bridgebench import cli_views as commands
    from bridgebench import selftest

    report = selftest.SelftestReport([selftest.Finding(1, 1, check, "steady", "x", "y", True, False)
                                      for check in (selftest.A_VS_A, selftest.PLUS2, selftest.PLUS5,
                                                    selftest.CLASS, selftest.PHASE)])
    # the widest figures: hundreds of units, and a check too disturbed to judge ("inconclusive")
    report.findings += [selftest.Finding(1, 1, selftest.CLASS, "steady", "x", "y", True, False)] * 754
    report.findings += [selftest.Finding(1, 1, selftest.A_VS_A, "steady", "x", "y", False, True)] * 120
    assert "inconclusive" in {t.verdict for t in report.tallies()}
    buffer = io.StringIO()
    Console(file=buffer, width=80, color_system=None, force_terminal=True).print(
        commands.selftest_table("Self-test over 1 repetition(s), budget 'default'", report.tallies()))
    lines = buffer.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    for tally in report.tallies():
        (line,) = [x for x in lines if x.startswith(tally.check)]
        assert line.split()[-1] == tally.verdict  # the whole row on its line


def test_a_warm_up_too_short_to_separate_is_flagged_and_batched_figures_say_per_call(tmp_path: Path) -> None:
    """Too short for changepoints, every iteration after the first counts as steady: a first iteration well
    above the others (set-up done in the first call) is named, since a longer warm-up would be counted, and
    figures of batched cells are said to be per call."""
    from bridgebench.timing.report import markdown

    store, cid = make_campaign(tmp_path / "short.sqlite", pexecs=3, iterations=8, crash=False)
    short = markdown.render(analyse(store, cid))
    line = next(x for x in short.splitlines() if "a warm-up this budget is too short to separate" in x)
    assert "fib on LUA/JIT (×" in line and "fib on CPYTHON" not in line  # lua/jit warms up, cpython is flat
    assert "figures are per call where an iteration made a batch of calls: fib on CPYTHON" in short
    assert "(batch of 4)" in short
    store, cid = make_campaign(tmp_path / "long.sqlite", pexecs=3, iterations=120, crash=False)
    assert "too short to separate" not in markdown.render(analyse(store, cid))  # changepoints found it
