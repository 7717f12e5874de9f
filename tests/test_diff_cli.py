"""`bridgebench diff` end to end on the fixture study: campaigns and mechanisms, and the refusal to
compare runs from different machines."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import bridgebench, chromium, copy_basic_study


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two campaigns of the fixture study, made once for the tests that diff them: the folder they ran in."""
    folder = tmp_path_factory.mktemp("two")
    study = copy_basic_study(folder)
    for _ in range(2):
        result = bridgebench("run", str(study), "-i", "12", "-p", "3", cwd=folder)  # 3: an interval
        assert result.returncode == 0, result.stderr
    return folder


def _two_campaigns(two: Path, tmp_path: Path) -> Path:
    """A copy of the two campaigns' store in tmp_path's results/, which the test may edit: its path."""
    shutil.copytree(two / "results", tmp_path / "results")
    return tmp_path / "results" / "bridgebench.sqlite"


def test_diff_two_campaigns_and_two_mechanisms(two: Path, tmp_path: Path) -> None:
    _two_campaigns(two, tmp_path)
    result = bridgebench("diff", "1", "2", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {c["benchmark"] for c in data["comparisons"]} == {"ok"}
    assert len(data["comparisons"]) == 2  # mechanisms a and b, each against itself
    for c in data["comparisons"]:
        assert c["verdict"] in ("faster", "slower", "equivalent", "different", "undecided")
        assert c["ratio"]["low"] <= c["ratio"]["value"] <= c["ratio"]["high"]
    result = bridgebench("diff", "1:a", "1:b", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "overall:" in result.stdout
    assert "reference loop" not in result.stdout  # within one campaign the machine's speed is on both sides
    assert "reference loop took" in bridgebench("diff", "1", "2", cwd=tmp_path).stdout  # real readings


def test_diff_says_when_the_machine_ran_at_another_speed_or_booted_again(two: Path, tmp_path: Path) -> None:
    db = _two_campaigns(two, tmp_path)
    with sqlite3.connect(db) as conn:  # campaign 2 as on a slow day, after the VM booted again
        conn.execute("UPDATE speed_reading SET record_json=json_set(record_json, '$.iteration_s', 0.002)"
                     " WHERE campaign_id=1")
        conn.execute("UPDATE speed_reading SET record_json=json_set(record_json, '$.iteration_s', 0.003)"
                     " WHERE campaign_id=2")
        conn.execute("UPDATE campaign SET environment_json=json_set(environment_json,"
                     " '$.booted', '1999-01-01 00:00:00 UTC') WHERE id=2")
        conn.execute("DELETE FROM analysis")  # readings are only ever added: edited, the stored analyses go
    result = bridgebench("diff", "1", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "THE MACHINE RAN AT ANOTHER SPEED: the reference loop took 2 ms an iteration in A and 3 ms in B " \
           "(1.50 times as long" in said
    assert "the machine booted again between them" in said and "1999-01-01 00:00:00 UTC for B" in said


def test_diff_refuses_different_machines_unless_told(two: Path, tmp_path: Path) -> None:
    db = _two_campaigns(two, tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE campaign SET machine='elsewhere', environment_json=json_set(environment_json,"
                     " '$.hostname', 'other-host') WHERE id=2")
    result = bridgebench("diff", "1", "2", cwd=tmp_path)
    assert result.returncode == 2
    assert "do not compare" in result.stderr and "other-host" in result.stderr
    assert "--cross-machine" in result.stderr
    result = bridgebench("diff", "1", "2", "--cross-machine", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "DIFFERENT MACHINES" in result.stdout


def test_diff_rejects_a_malformed_side(tmp_path: Path) -> None:
    result = bridgebench("diff", "x", "2", cwd=tmp_path)
    assert result.returncode == 2
    assert "expected CAMPAIGN, CAMPAIGN:MECHANISM or a baseline file" in result.stderr


def test_diff_as_markdown_and_as_an_html_page_with_the_ratio_plot(two: Path, tmp_path: Path) -> None:
    _two_campaigns(two, tmp_path)
    md = bridgebench("diff", "1", "2", "--format", "markdown", cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    lines = md.stdout.splitlines()
    assert lines[0] == "# bridgebench diff"
    assert lines[2].startswith("**Overall:** ")  # the verdict counts first, for a pull request's summary
    details = lines[lines.index("<details><summary>Every benchmark, every column</summary>"):]
    table = [ln for ln in details if ln.startswith("| ok |")]
    assert len(table) == 2 and all(ln.count(" | ") == 12 for ln in table)  # one row per mechanism, every column
    changed = [ln for ln in lines[:len(lines) - len(details)] if ln.startswith("| ok |")]
    assert ("## What changed" in lines) == bool(changed)  # only what is faster, slower or different

    page = tmp_path / "diff.html"
    result = bridgebench("diff", "1:a", "2:b", "--format", "html", "-o", str(page), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = page.read_text()
    assert "<svg" in text and 'aria-label="Ratio B/A of steady performance per benchmark, with its 99% CI"' in text
    assert text.count("<circle") == 1  # one benchmark, one ratio
    assert "<h2>Verdicts</h2>" in text and "<th>B/A (99% CI)</th>" in text
    assert "http" not in text.replace("http-equiv", "")  # self-contained: nothing to fetch
    dom = chromium(page, "--dump-dom").stdout
    assert "<svg" in dom and "Verdicts" in dom


def test_diff_in_a_pipe_stays_readable(two: Path, tmp_path: Path) -> None:
    """Piped (not a terminal) at 80 columns: one short row a benchmark, the reasons below the table."""
    _two_campaigns(two, tmp_path)
    result = bridgebench("diff", "1", "2", cwd=tmp_path, env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(ln) for ln in lines if ln.startswith(("┃", "│"))) <= 80
    rows_ = [ln for ln in lines if ln.startswith("│ ok")]
    assert len(rows_) == 2  # one line per comparison: no cell wrapped
    assert sum(ln.startswith(("  ok (1:a vs 2:a): ", "  ok (1:b vs 2:b): ")) for ln in lines) == 2


def test_diff_rejects_an_unknown_format(tmp_path: Path) -> None:
    result = bridgebench("diff", "1", "2", "--format", "pdf", cwd=tmp_path)
    assert result.returncode == 2
    assert "--format: expected one of terminal, markdown, json, html" in result.stderr


def test_the_gate_fails_on_the_verdicts_it_is_told_and_only_on_them(basic_study: Path, tmp_path: Path) -> None:
    # "twice": b takes exactly twice a's time, "constant": the same time; planted, not timed, so the verdicts are
    # known whatever the machine does: slower on twice, equivalent on constant.
    from tests.conftest import add_benchmark

    add_benchmark(basic_study, "twice")
    add_benchmark(basic_study, "constant")
    ran = bridgebench("run", str(basic_study), "-p", "3", "-i", "12", "--benchmarks", "twice,constant", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    verdicts = {c["benchmark"]: c["verdict"]
                for c in json.loads(bridgebench("diff", "1:a", "1:b", "--json", cwd=tmp_path).stdout)["comparisons"]}
    assert verdicts == {"twice": "slower", "constant": "equivalent"}
    gated = bridgebench("diff", "1:a", "1:b", "--fail-on", "slower", cwd=tmp_path)
    assert gated.returncode == 7, gated.stderr
    assert gated.stderr.strip() == "gate failed (--fail-on slower): slower on 1 (twice (1:b))"
    assert "twice" in gated.stdout  # the table is printed all the same
    assert bridgebench("diff", "1:a", "1:b", "--fail-on", "faster,different", cwd=tmp_path).returncode == 0
    both = bridgebench("diff", "1:a", "1:b", "--fail-on", "faster", "--fail-on", "equivalent", cwd=tmp_path)
    assert both.returncode == 7 and "equivalent on 1 (constant (1:b))" in both.stderr
    # the margin the verdicts use is said in the header, and can be given
    wide = bridgebench("diff", "1:a", "1:b", "--margin", "0.5%", "--format", "markdown", cwd=tmp_path)
    assert wide.returncode == 0 and "equivalent within ±0.5%" in wide.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("--fail-on", "worse"), "--fail-on worse: expected verdicts among faster, slower, equivalent, different, "
                             "undecided"),
    (("--margin", "150%"), "--margin '150%': expected a share above 0 and below 1"),
    (("--margin", "two"), "--margin 'two': expected a share such as 2% or 0.02"),
])
def test_a_wrong_gate_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = bridgebench("diff", "1", "2", *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_diff_says_when_the_study_files_differ_between_the_campaigns(basic_study: Path, tmp_path: Path) -> None:
    """The study file is the same, but a benchmark's code changed between the campaigns: the diff says so. A
    change to the study's markdown (its README) changes no code measured, and the diff does not claim one."""
    (basic_study.parent / "bench.lua").write_text("return {run = function(n) return n end}\n")
    for edit in ("", "-- edited\n"):
        (basic_study.parent / "bench.lua").write_text(edit + "return {run = function(n) return n end}\n")
        done = bridgebench("run", str(basic_study), "-i", "6", "-p", "3", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    across = bridgebench("diff", "1", "2", cwd=tmp_path)
    assert across.returncode == 0 and "THE STUDY'S FILES DIFFER between A and B" in across.stdout
    within = bridgebench("diff", "1:a", "1:b", cwd=tmp_path)
    assert within.returncode == 0 and "FILES DIFFER" not in within.stdout
    (basic_study.parent / "README.md").write_text("# what the study measures\n")  # no code edited since 2
    again = bridgebench("run", str(basic_study), "-i", "6", "-p", "3", cwd=tmp_path)
    assert again.returncode == 0 and "FILES DIFFER" not in bridgebench("diff", "2", "3", cwd=tmp_path).stdout
