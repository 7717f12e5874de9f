"""What more time would decide (bridgebench/timing/more_time.py): a campaign whose ratios stopped out of time
is projected benchmark by benchmark, and its report names the time cap that would give them their blocks.
Pure functions over planted figures: the ratios' estimates and spreads are set, so every count is known."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from bridgebench import question
from bridgebench.report import fmt
from bridgebench.result import OUT_OF_TIME, SETTLED, AdaptiveSummary, CampaignFacts, CellDecision
from bridgebench.stats import Estimate
from bridgebench.stats.executions import t_quantile
from bridgebench.stats.spread import sd_bounds
from bridgebench.timing import more_time
from bridgebench.timing.analysis import _execution_s
from bridgebench.timing.report import tables
from bridgebench.timing.result import Analysis, AuditSummary, Cell
from tests.conftest import add_benchmark, bridgebench

LOOKS = (3, 5, 8, 12, 18, 27, 41, 62, 93, 140, 210, 300)
CONFIDENCE = 0.9992


def _cell(benchmark: str, mechanism: str, state: str, execution_s: float, ratio: tuple[float, int] | None = None,
          sd: float | None = None) -> Cell:
    """A cell of an aimed campaign: its ratio (estimate, blocks) with an interval as wide as `sd` makes it."""
    estimate = None
    if ratio is not None:
        value, blocks = ratio
        half = t_quantile(1 - (1 - CONFIDENCE) / 2, blocks - 1) * (sd or 0.0) / math.sqrt(blocks)
        estimate = Estimate(value, value * math.exp(-half), value * math.exp(half), CONFIDENCE, "lock-step blocks",
                            blocks)
    return Cell(benchmark, mechanism, 3, (), None, 0, 0, ratio=estimate, ratio_between_sd=sd,
                adaptive=CellDecision(state, "", 5, None), execution_s=execution_s)


def _analysis(cells: list[Cell], until_decided: bool = True) -> Analysis:
    campaign = CampaignFacts(1, "planted", "done", 0.0, 1.0, "0" * 12, "m", {}, {}, 10, 10)
    audit = AuditSummary(0, 0, False, None, None, None, None, 0.0, {})
    adaptive = AdaptiveSummary(0.02, 300, 540.0, 3, 5, {OUT_OF_TIME: 4}, until_decided, LOOKS, 0.05)
    result = Analysis(campaign, 0.99, 1, "base", (), (), (), audit, adaptive, tuple(cells), {}, equivalence=0.02)
    return replace(result, more_time=tuple(more_time.project(result)))  # as analysis.analyse keeps them


def test_a_ratio_is_judged_at_the_first_look_past_the_count_that_would_decide_it() -> None:
    assert more_time._judged_at(26, 2.0, LOOKS, 300) == 41  # 28 falls between the looks at 27 and 41
    assert more_time._judged_at(26, 0.0, LOOKS, 300) == 27  # decided now, but judged only at the next look
    assert more_time._judged_at(26, 14.0, LOOKS, 300) == 41
    assert more_time._judged_at(26, 275.0, LOOKS, 300) is None  # past the cap
    assert more_time._judged_at(26, math.inf, LOOKS, 300) is None
    assert more_time._judged_at(26, 3.0, (), 300) == 29  # judged every round


def test_a_benchmarks_blocks_cost_what_its_members_still_in_them_do() -> None:
    # x: luajit2 near 1 with a small spread, PUC Lua decided slower but wider than ±5 %, at 12 blocks
    jit2 = _cell("x", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), 0.03)
    puc = _cell("x", "puc", OUT_OF_TIME, 2.0, (3.0, 12), 0.05)
    base = _cell("x", "base", OUT_OF_TIME, 0.4)
    [got] = more_time.project(_analysis([jit2, puc, base]))
    jit2_at = more_time._judged_at(12, question.blocks_left(jit2.ratio, 0.03, 0.02, 0.05), LOOKS, 300)  # type: ignore
    puc_at = more_time._judged_at(12, question.blocks_left(puc.ratio, 0.05, 0.02, 0.05), LOOKS, 300)  # type: ignore
    assert jit2_at is not None and puc_at is not None and puc_at < jit2_at, (puc_at, jit2_at)
    # all three members up to PUC Lua's count, then luajit2 and its baseline alone
    assert got.blocks == jit2_at
    assert got.seconds == pytest.approx((puc_at - 12) * (0.4 + 0.5 + 2.0) + (jit2_at - puc_at) * (0.4 + 0.5))


def test_nearest_first_then_out_of_reach_then_not_projected_and_the_cap_that_gives_them_their_time() -> None:
    cells = [_cell("near", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), 0.02), _cell("near", "base", OUT_OF_TIME, 0.5),
             _cell("far", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), 0.03), _cell("far", "base", OUT_OF_TIME, 0.5),
             _cell("wild", "jit2", OUT_OF_TIME, 0.5, (1.01, 12), 0.5), _cell("wild", "base", OUT_OF_TIME, 0.5),
             _cell("alpha", "jit2", OUT_OF_TIME, 0.5, (1.0, 5), 0.02), _cell("alpha", "base", OUT_OF_TIME, 0.5),
             _cell("done", "jit2", SETTLED, 0.5, (1.0, 12), 0.001), _cell("done", "base", SETTLED, 0.5)]
    result = _analysis(cells)
    got = more_time.project(result)
    assert [p.benchmark for p in got] == ["near", "far", "wild", "alpha"]  # not by name
    near, far, wild, young = got
    assert near.seconds is not None and far.seconds is not None and near.seconds < far.seconds
    assert (near.state, far.state, wild.state, young.state) == (more_time.PROJECTED, more_time.PROJECTED,
                                                               more_time.OUT_OF_REACH, more_time.NOT_YET)
    assert (wild.blocks, wild.seconds, young.blocks, young.seconds) == (None, None, None, None)
    cap = more_time.max_time(result, got)
    more = near.seconds + far.seconds
    assert cap is not None and cap % 60 == 0 and 540 + more <= cap < 600 + more
    line = tables.more_time_line(result)
    assert line is not None
    assert f"near at {near.blocks} blocks" in line and "wild out of reach as it stands (jit2: not within 300" in line
    assert "alpha not projected yet (jit2: fewer than 8 blocks" in line
    assert f"`bridgebench run planted --resume --max-time {cap:g}` would give these 2 benchmarks" in line
    assert "done" not in line  # a decided benchmark needs no more time
    alone = tables.more_time_line(_analysis(cells[:2]))
    assert alone is not None and alone.endswith(f"would give it its {fmt.duration(near.seconds, 2)} "
                                                f"({fmt.duration(near.seconds_low, 2)} to "
                                                f"{fmt.duration(near.seconds_high, 2)} at the ends of the spreads' "
                                                "intervals).")


def test_a_projection_comes_with_the_seconds_at_either_end_of_its_spreads_interval() -> None:
    """From 12 blocks a spread's 99 % interval is about 0.6 to 2 times it: the projection is staged again at each
    end, the estimate held; past the cap at the high end it is out of reach there, and the line says so."""
    sd = 0.03
    low_sd, high_sd = sd_bounds(sd, 12, 0.99)
    assert 0.55 < low_sd / sd < 0.7 and 1.7 < high_sd / sd < 2.2
    cells = [_cell("x", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), sd), _cell("x", "base", OUT_OF_TIME, 0.5)]
    [got] = more_time.project(_analysis(cells))

    def blocks_at(spread: float) -> int:
        left = question.blocks_left(cells[0].ratio, spread, 0.02, 0.05)  # type: ignore[arg-type]
        at = more_time._judged_at(12, left, LOOKS, 300)  # type: ignore[arg-type]
        assert at is not None
        return at

    assert (got.blocks, got.seconds) == (blocks_at(sd), (blocks_at(sd) - 12) * 1.0)
    assert (got.blocks_low, got.seconds_low) == (blocks_at(low_sd), (blocks_at(low_sd) - 12) * 1.0)
    assert (got.blocks_high, got.seconds_high) == (blocks_at(high_sd), (blocks_at(high_sd) - 12) * 1.0)
    assert got.seconds_low < got.seconds < got.seconds_high  # type: ignore[operator]
    # a spread whose high end needs more than 300 blocks: projected, out of reach at that end
    wide = [_cell("y", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), 0.06), _cell("y", "base", OUT_OF_TIME, 0.5)]
    [far] = more_time.project(_analysis(wide))
    assert far.state == more_time.PROJECTED and far.seconds_low is not None
    assert far.blocks_high is None and far.seconds_high is None
    line = tables.more_time_line(_analysis(cells + wide)) or ""
    assert f"y at {far.blocks} blocks, about {fmt.duration(far.seconds, 2)} more " \
           f"({fmt.duration(far.seconds_low, 2)}, or out of reach)" in line
    assert "at the high ends 1 of them out of reach)." in line


def test_the_more_time_line_says_whose_noise_holds_the_ratios_stopped_out_of_time() -> None:
    from dataclasses import replace

    def shared(cells: list[Cell], *shares: float | None) -> list[Cell]:
        stopped = iter(shares)
        return [replace(c, ratio_within_share=next(stopped)) if c.mechanism == "jit2" else c for c in cells]

    cells = [_cell("near", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), 0.02), _cell("near", "base", OUT_OF_TIME, 0.5),
             _cell("far", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), 0.03), _cell("far", "base", OUT_OF_TIME, 0.5),
             _cell("done", "jit2", SETTLED, 0.5, (1.0, 12), 0.001), _cell("done", "base", SETTLED, 0.5)]
    # the median over the ratios stopped out of time (a settled one's share is not theirs)
    noisy = _analysis(shared(cells, 0.6, 0.8, 0.0))
    assert more_time.within_share(noisy) == pytest.approx(0.7)
    assert (tables.more_time_line(noisy) or "").endswith(
        "The noise within blocks made up 70% of these ratios' spread between blocks (the median of their shares "
        "within, in the lock-step table): most of it, so a quieter machine or hour would decide them sooner (more "
        "rounds a block would narrow each block's value, at about the time the blocks they spare would take: "
        "methodology §13, \"Rounds a later block\"). `bridgebench doctor` says how much of the machine's shared "
        "cache the host's other tenants hold now, a noise taking turns cannot cancel (methodology §13, \"The shared "
        "cache\").")
    quiet = tables.more_time_line(_analysis(shared(cells, 0.1, None, 0.9)))
    assert quiet is not None and quiet.endswith(
        "made up 10% of these ratios' spread between blocks (the median of their shares within, in the lock-step "
        "table): less than half, so the processes' own differences hold them, and only more blocks decide them.")
    unknown = _analysis(cells)  # no shares (sequential ratios, or reports before result version 20): nothing said
    assert more_time.within_share(unknown) is None
    assert "noise within blocks made up" not in (tables.more_time_line(unknown) or "")


def test_no_projection_without_ratios_stopped_out_of_time_or_a_question() -> None:
    settled = [_cell("x", "jit2", SETTLED, 0.5, (1.0, 12), 0.001), _cell("x", "base", SETTLED, 0.5)]
    assert more_time.project(_analysis(settled)) == [] and tables.more_time_line(_analysis(settled)) is None
    stopped = [_cell("x", "jit2", OUT_OF_TIME, 0.5, (1.0, 12), 0.02), _cell("x", "base", OUT_OF_TIME, 0.5)]
    assert more_time.project(_analysis(stopped, until_decided=False)) == []  # each cell by its own CI


def test_an_execution_costs_what_the_later_ones_of_its_cell_did() -> None:
    walls = [(0, 3.0), (1, 3.2), (2, 2.8), (3, 1.0), (4, 1.2), (5, 0.9)]
    cell = SimpleNamespace(good=[SimpleNamespace(pexec=p, wall_s=w) for p, w in walls], first=3)
    assert _execution_s(cell) == pytest.approx(1.0)  # type: ignore[arg-type]
    cell.first = 6  # none after the first ones yet: all of them
    assert _execution_s(cell) == pytest.approx(2.0)  # type: ignore[arg-type]


def test_a_campaign_stopped_out_of_time_says_so_in_its_reports(basic_study: Path, tmp_path: Path) -> None:
    """End to end: a campaign aimed at the question whose 0.3 s executions cannot fit in 1.5 s stops its ratio out
    of time, too young to project, and the terminal, markdown and HTML reports say so where they say what to run."""
    add_benchmark(basic_study, "sleepy")
    done = bridgebench("run", str(basic_study), "--benchmarks", "sleepy", "--until", "decided", "--max-executions",
                       "20", "--max-time", "1.5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = "More time, projected from each ratio stopped out of time as it stands"
    young = "sleepy not projected yet (Mechanism B: fewer than 8 blocks"
    assert said in done.stdout and young in done.stdout, done.stdout
    # the JSON report holds the projection for a program to read, and reads back with it
    data = json.loads(bridgebench("report", "--format", "json", cwd=tmp_path).stdout)
    [kept] = data["more_time"]
    assert (kept["benchmark"], kept["state"], kept["blocks"]) == ("sleepy", more_time.NOT_YET, None)
    assert kept["why"].startswith("Mechanism B: fewer than 8 blocks")
    assert Analysis.from_json(data).more_time == (more_time.Projection(**kept),)
    md = bridgebench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert said in md and young in md
    page = next((tmp_path / "results").glob("basic-*.html")).read_text()  # the page the run wrote
    assert said in page


def test_the_replay_says_whether_a_resume_landed_within_the_projections_ends(tmp_path: Path) -> None:
    """evidence/more_time_replay.py: where a campaign first stopped (the first round with no open cell, each cell's
    executions as of it), and whether what the resume did lay within each projection's ends."""
    from evidence.more_time_replay import stop_counts, within_ends

    p = more_time.Projection("x", more_time.PROJECTED, 41, 10.0, blocks_low=18, seconds_low=3.0, blocks_high=140,
                             seconds_high=50.0)
    assert [within_ends(p, True, n) for n in (12, 18, 93, 140, 210)] == ["no", "yes", "yes", "yes", "no"]
    assert [within_ends(p, False, n) for n in (27, 140, 141)] == ["open", "open", "no"]
    endless = more_time.Projection("y", more_time.PROJECTED, 93, 40.0, blocks_low=41, seconds_low=17.0)
    assert (within_ends(endless, True, 300), within_ends(endless, False, 300)) == ("yes", "open")
    assert within_ends(more_time.Projection("z", more_time.OUT_OF_REACH), True, 5) == "—"

    db = sqlite3.connect(tmp_path / "d.sqlite")
    db.execute("CREATE TABLE cell_decision (campaign_id, round, benchmark, mechanism, executions, state)")
    db.executemany("INSERT INTO cell_decision VALUES (1, ?, ?, ?, ?, ?)", [
        (0, "x", "a", 3, "open"), (0, "x", "b", 3, "open"), (0, "y", "a", 3, "settled"),
        (1, "x", "a", 5, "out of time"), (1, "x", "b", 5, "settled"),  # round 1: nothing open, it stopped here
        (2, "x", "a", 8, "settled"),  # the resume's round
    ])
    assert stop_counts(db, 1) == (1, {("x", "a"): 5, ("x", "b"): 5, ("y", "a"): 3})
