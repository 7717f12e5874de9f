"""Instruction counts per iteration (`run --metric instructions`, bridgebench/instructions.py): the probes'
brackets, the pinning, mechanisms that cannot be counted, and counts analysed by the timing code.

Every test here asserts counts, which do not depend on the machine's speed: a planted C loop executes the
same instructions however busy the machine is."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bridgebench import instructions
from bridgebench.runner import OK, PROTOCOL, execute, execute_counted
from bridgebench.store import Store
from tests.conftest import REPO, bridgebench

needs_valgrind = pytest.mark.skipif(instructions.unavailable() is not None,
                                    reason=f"cannot count here: {instructions.unavailable()}")

PARTS = """# callgrind format
events: Ir
part: 1
summary: 1000
totals: 1000
part: 2
summary: 2000
totals: 2000
part: 3
summary: 55
totals: 55
"""


def test_parse_reads_one_part_an_iteration_and_drops_the_exit() -> None:
    assert instructions.parse(PARTS, 2) == [1000.0, 2000.0]


@pytest.mark.parametrize(("text", "iterations", "why"), [
    ("", 2, "no profile"),
    ("events: Ir\npart: 1\nsummary: 77\n", 2, "does not bracket"),
    (PARTS, 3, "saw 2 bracketed iterations, expected 3"),
    (PARTS.replace("events: Ir", "events: Dr"), 2, "not Ir"),
])
def test_parse_refuses_what_is_not_one_count_an_iteration(text: str, iterations: int, why: str) -> None:
    with pytest.raises(instructions.CountingError, match=why):
        instructions.parse(text, iterations)


def test_the_command_pins_aslr_glibc_and_the_stack(tmp_path: Path) -> None:
    out = tmp_path
    for path_length in (5, 500):  # a checkout's path: the client's strings take the same room either way
        argv = ["/x" * path_length, "probe.lua"]
        wrapped, env = instructions.command(argv, {"PATH": "/usr/bin", "LUA_CPATH": "/b/?.so"}, out)
        assert wrapped[:4] == ["setarch", wrapped[1], "-R", "valgrind"]
        assert "--tool=callgrind" in wrapped and f"--callgrind-out-file={out}/callgrind.out.%p" in wrapped
        assert wrapped[-2:] == argv
        assert env["GLIBC_TUNABLES"] == instructions.GLIBC_TUNABLES and env["LUA_CPATH"] == "/b/?.so"
        assert env["GODEBUG"] == "asyncpreemptoff=1"  # Go's timer signals: counts and callgrind both trip
        assert env["GOMAXPROCS"] == "1"  # no Go thread spinning on another under valgrind
        if instructions.faketime_library():
            assert env["FAKETIME"] == instructions.FAKETIME and instructions.faketime_library() in env["LD_PRELOAD"]
        strings = sum(len(a) + 1 for a in argv) + sum(len(k) + len(v) + 2 for k, v in env.items())
        assert strings == instructions.STACK_BYTES
    with pytest.raises(instructions.CountingError, match="more than"):
        instructions.command(["x"], {"BIG": "y" * instructions.STACK_BYTES}, out)
    _, env = instructions.command(["x"], {"GODEBUG": "madvdontneed=1", "GOMAXPROCS": "4"}, out)
    assert env["GODEBUG"] == "madvdontneed=1,asyncpreemptoff=1"  # the mechanism's own settings are kept
    assert env["GOMAXPROCS"] == "1"  # but not its own GOMAXPROCS: counts are taken with one P


def test_a_study_widens_what_it_needs_only_when_counted(tmp_path: Path) -> None:
    """count_env (a wall-clock deadline, say) is added to every mechanism's environment in counted runs."""
    from bridgebench.build import BuildResult
    from bridgebench.campaign.timing import command_for
    from bridgebench.study import read_study

    study_file = tmp_path / "counted" / "study.toml"
    study_file.parent.mkdir()
    study_file.write_text(STUDY.format(repo=REPO).replace('baseline = "a"',
                                                          'baseline = "a"\ncount_env = { DEADLINE_MS = "60000" }'))
    study = read_study(study_file)
    build = BuildResult("double", True, "", "v1", tmp_path, "h", True)
    _, counted = command_for(study, build, "warmup", "100", 3, metric=instructions.INSTRUCTIONS)
    _, timed = command_for(study, build, "warmup", "100", 3)
    assert counted["DEADLINE_MS"] == "60000" and counted["PLANTED_SCALE"] == "2"
    assert "DEADLINE_MS" not in timed
    bad = study_file.read_text().replace('{ DEADLINE_MS = "60000" }', '{ DEADLINE_MS = 60000 }')
    study_file.write_text(bad)
    with pytest.raises(Exception, match="count_env"):
        read_study(study_file)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    """The self-test's planted C loop, with the brackets and without (-DBB_COUNTING=0)."""
    out = tmp_path_factory.mktemp("planted")
    built = {}
    for bracketed in (True, False):
        exe = out / ("planted" if bracketed else "planted-unbracketed")
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", *(() if bracketed else ("-DBB_COUNTING=0",)),
                        "-o", str(exe), str(REPO / "probes/c/planted.c")], check=True)
        built[bracketed] = exe
    return built


@needs_valgrind
def test_an_iteration_of_known_work_counts_the_same_twice_and_double_work_about_double(
        planted: dict[bool, Path], tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    once = execute_counted([str(planted[True]), "4", "20000"], env, tmp_path, 4, 120)
    twice = execute_counted([str(planted[True]), "4", "40000"], env, tmp_path, 4, 120)
    assert once.status == OK and twice.status == OK, (once.detail, twice.detail)
    a = once.output.counters[instructions.INSTRUCTIONS]  # type: ignore[union-attr]
    b = twice.output.counters[instructions.INSTRUCTIONS]  # type: ignore[union-attr]
    assert len(set(a)) == 1 and len(set(b)) == 1  # every iteration of the same work: the same count
    assert 1.99 < b[0] / a[0] < 2.01
    again = execute_counted([str(planted[True]), "4", "20000"], env, tmp_path, 4, 120)
    assert again.output.counters[instructions.INSTRUCTIONS] == a  # type: ignore[union-attr]
    assert once.peak_rss_kb is None  # valgrind's, not the probe's: not reported


@needs_valgrind
def test_glibc_runs_its_baseline_routines_under_the_pinning(planted: dict[bool, Path], tmp_path: Path) -> None:
    """GLIBC_TUNABLES takes effect: the profile of a counted run names glibc's SSE2 string and memory
    routines and none of the AVX ones a current CPU would get."""
    argv, env = instructions.command([str(planted[True]), "2", "1000"], {"PATH": os.environ["PATH"]}, tmp_path)
    run = execute(argv, env, tmp_path, 2, 120)
    assert run.status == OK, run.detail
    (out,) = tmp_path.glob("callgrind.out.*")
    names = set(re.findall(r"^c?fn=(?:\(\d+\) )?(\S+)", out.read_text(), re.MULTILINE))
    glibc = {n for n in names if re.match(r"__(mem|str)\w+_(sse2|avx|evex)", n)}
    assert any("sse2" in n for n in glibc), sorted(names)
    assert not any("avx" in n or "evex" in n for n in glibc), sorted(glibc)


@needs_valgrind
def test_a_probe_without_brackets_is_a_protocol_violation(planted: dict[bool, Path], tmp_path: Path) -> None:
    run = execute_counted([str(planted[False]), "3", "1000"], {"PATH": os.environ["PATH"]}, tmp_path, 3, 120)
    assert run.status == PROTOCOL and "does not bracket" in run.detail



@needs_valgrind
def test_work_in_another_process_makes_the_counts_refused(planted: dict[bool, Path], tmp_path: Path) -> None:
    """An RPC plugin's server, a helper on a pipe: its instructions are not inside the probe's brackets, so
    counts of such a mechanism would leave them out; a second process's profile is refused with its name.
    The same program exec'd in place (one process) is counted."""
    env = {"PATH": os.environ["PATH"]}
    helper = execute_counted(["sh", "-c", f"/bin/true; exec {planted[True]} 3 1000"], env, tmp_path, 3, 120)
    assert helper.status == PROTOCOL
    assert "runs part of its work in 1 other process(es) (/bin/true)" in helper.detail
    in_place = execute_counted(["sh", "-c", f"exec {planted[True]} 3 1000"], env, tmp_path, 3, 120)
    assert in_place.status == OK, in_place.detail
    assert not list(tmp_path.glob("callgrind.out.*"))


@needs_valgrind
@pytest.mark.skipif(shutil.which("lua5.4") is None, reason="lua5.4 is not installed")
def test_the_lua_probe_counts_puc_lua_exactly_again(tmp_path: Path) -> None:
    """PUC Lua with ASLR off, a pinned environment and the wall clock held: two process executions count the
    same, iteration by iteration, to the instruction (the Lua probe's brackets come from bbclock). Lua 5.4
    seeds its string hashes with the time (luai_makeseed): with the clock running, counts move."""
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I/usr/include/lua5.4", str(REPO / "probes/lua/bbclock.c"),
                    "-o", str(tmp_path / "bbclock.so")], check=True)
    argv = ["lua5.4", str(REPO / "probes/lua/probe.lua"), str(REPO / "studies/lua-vms/benchmarks/queens.lua"), "3",
            "6"]
    env = {"PATH": os.environ["PATH"], "LUA_CPATH": f"{tmp_path}/?.so", "LUA_PATH": ""}
    runs = [execute_counted(argv, env, tmp_path, 3, 300) for _ in range(2)]
    assert all(r.status == OK for r in runs), [r.detail for r in runs]
    first, second = (r.output.counters[instructions.INSTRUCTIONS] for r in runs)  # type: ignore[union-attr]
    assert min(first) > 0 and len(first) == 3
    assert first == second


STUDY = """
[study]
name = "counted"
baseline = "a"

[budget]
process_executions = 3
iterations = 60
timeout_s = 300

[mechanisms.a]
label = "A"
commands = ["cc"]
build = ["cc -O2 -o {{build}}/planted {repo}/probes/c/planted.c"]
run = ["{{build}}/planted", "{{iterations}}", "{{param}}"]

[mechanisms.double]
twin_of = "a"
label = "A with twice the work"
env = {{ PLANTED_SCALE = "2" }}

[mechanisms.unbracketed]
label = "A built without the brackets"
commands = ["cc"]
build = ["cc -O2 -DBB_COUNTING=0 -o {{build}}/planted {repo}/probes/c/planted.c"]
run = ["{{build}}/planted", "{{iterations}}", "{{param}}"]

[benchmarks.warmup]
param = "20000/10:1.5"
check_param = "100"
"""


@pytest.fixture(scope="module")
def counted_campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    work = tmp_path_factory.mktemp("counted")
    study = work / "counted" / "study.toml"
    study.parent.mkdir()
    study.write_text(STUDY.format(repo=REPO))
    if instructions.unavailable() is not None:
        pytest.skip(f"cannot count here: {instructions.unavailable()}")
    result = bridgebench("run", str(study), "--metric", "instructions", "--store", str(work / "s.sqlite"),
                         "--report-dir", str(work / "results"), "--build-dir", str(work / "build"), cwd=work,
                         timeout=600)
    return work, result


def test_a_counted_campaign_is_analysed_by_the_timing_code(
        counted_campaign: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    work, result = counted_campaign
    assert result.returncode == 0, result.stderr
    report = json.loads(next((work / "results").glob("counted-*.json")).read_text())
    cells = {c["mechanism"]: c for c in report["cells"]}
    # The planted warm-up (the first 10 iterations do 1.5 times the work) is exact in counts.
    assert cells["a"]["classification"] == "warmup"
    assert {r["steady_iteration"] for r in cells["a"]["per_execution"]} == {11}
    ratio = cells["double"]["ratio"]
    assert 1.99 < ratio["low"] <= ratio["value"] <= ratio["high"] < 2.01
    assert cells["a"]["steady_performance"]["low"] == pytest.approx(cells["a"]["steady_performance"]["high"])
    markdown = next((work / "results").glob("counted-*.md")).read_text()
    assert "Steady count (99% CI)" in markdown and " k Ir" in markdown  # A: about 240,000 instructions
    assert "metric: instructions executed (Ir)" in markdown and "Counts leave out system calls" in markdown


def test_a_mechanism_that_cannot_be_counted_is_unavailable_with_the_reason(
        counted_campaign: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    work, result = counted_campaign
    assert result.returncode == 0, result.stderr
    store = Store(work / "s.sqlite", create=False)
    builds = {b["mechanism"]: b for b in store.builds(1)}
    assert not builds["unbracketed"]["available"]
    assert "cannot count instructions under callgrind" in builds["unbracketed"]["reason"]
    assert "does not bracket" in builds["unbracketed"]["reason"]
    assert builds["a"]["available"] and builds["double"]["available"]
    assert not [e for e in store.executions(1) if e.mechanism == "unbracketed"]


def test_the_pinning_is_recorded_with_the_campaign(counted_campaign: tuple[Path, subprocess.CompletedProcess[str]]
                                                   ) -> None:
    work, _ = counted_campaign
    (config,) = sqlite3.connect(work / "s.sqlite").execute("SELECT config_json FROM campaign").fetchone()
    options = json.loads(config)["options"]
    assert options["metric"] == instructions.INSTRUCTIONS
    assert options["counting"] == instructions.pinning()
    assert options["counting"]["aslr"].startswith("off") and options["counting"]["valgrind"].startswith("valgrind")


def test_diff_refuses_counts_against_times_and_counts_under_another_pinning(
        counted_campaign: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    work, _ = counted_campaign
    db = work / "s.sqlite"
    timed = bridgebench("run", str(work / "counted" / "study.toml"), "--mechanisms", "a", "-p", "3", "-i", "3",
                        "--store", str(db), "--report-dir", str(work / "results"), "--build-dir",
                        str(work / "build"), cwd=work, timeout=300)
    assert timed.returncode == 0, timed.stderr
    refused = bridgebench("diff", "1", "2", "--store", str(db), cwd=work)
    assert refused.returncode == 2 and "counts and times do not compare" in refused.stderr
    # A third campaign counted as the first, then told it ran under another valgrind: refused.
    again = bridgebench("run", str(work / "counted" / "study.toml"), "--metric", "instructions", "--mechanisms",
                        "a", "-p", "3", "-i", "3", "--store", str(db), "--report-dir", str(work / "results"),
                        "--build-dir", str(work / "build"), cwd=work, timeout=300)
    assert again.returncode == 0, again.stderr
    assert bridgebench("diff", "1", "3", "--store", str(db), cwd=work).returncode == 0
    with sqlite3.connect(db) as con:
        (config,) = con.execute("SELECT config_json FROM campaign WHERE id = 3").fetchone()
        changed = json.loads(config)
        changed["options"]["counting"]["valgrind"] = "valgrind-0.0"
        con.execute("UPDATE campaign SET config_json = ? WHERE id = 3", (json.dumps(changed),))
    other = bridgebench("diff", "1", "3", "--store", str(db), cwd=work)
    assert other.returncode == 2 and "different pinnings" in other.stderr and "valgrind-0.0" in other.stderr


def test_a_machine_without_valgrind_is_refused_in_one_line(tmp_path: Path) -> None:
    study = tmp_path / "counted" / "study.toml"
    study.parent.mkdir()
    study.write_text(STUDY.format(repo=REPO))
    result = bridgebench("run", str(study), "--metric", "instructions", "--store", str(tmp_path / "s.sqlite"),
                         cwd=tmp_path, env={"PATH": "/nonexistent"}, timeout=60)
    assert result.returncode == 2
    assert "cannot count instructions: valgrind is not installed" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.sqlite").exists()


def test_a_check_that_fails_under_callgrind_makes_the_mechanism_unavailable_not_the_check_failed() -> None:
    """Valgrind 3.19 aborts now and then on the Go runtime (methodology §11): such a mechanism is unavailable
    for the metric, with the failure as the reason, and the others are counted; a wrong answer still fails."""
    from bridgebench.build import BuildResult
    from bridgebench.campaign.kind import CheckRow
    from bridgebench.campaign.timing import _without_uncountable

    builds = {m: BuildResult(m, True, "", "v1", Path("/b") / m, "h", True) for m in ("go", "lua", "wrong")}
    rows = [CheckRow("small", "go", "agrees", "3", ""), CheckRow("large", "go", "failed", None,
                                                                 "crashed: valgrind itself aborted"),
            CheckRow("small", "lua", "agrees", "3", ""), CheckRow("large", "lua", "agrees", "9", ""),
            CheckRow("small", "wrong", "disagrees", "4", "expected '3'")]
    kept = _without_uncountable(rows, builds)
    assert [(r.benchmark, r.mechanism) for r in kept] == [("small", "lua"), ("large", "lua"), ("small", "wrong")]
    assert not builds["go"].available
    assert builds["go"].reason == "cannot count instructions under callgrind: large: crashed: valgrind itself aborted"
    assert builds["lua"].available and builds["wrong"].available


@needs_valgrind
def test_a_counted_report_sets_its_ratios_beside_the_newest_timed_campaign_of_the_same_work(tmp_path: Path
                                                                                           ) -> None:
    """Counts beside time (time_beside_counts.py): a counted campaign's report names no timed campaign until one of the
    same study, parameters and machine is stored, then shows each cell's two ratios; a timed campaign of
    other parameters is not set beside it. The time ratios themselves are not asserted (they are the
    machine's); the count ratio is (the twin does twice the work)."""
    study = tmp_path / "counted" / "study.toml"
    study.parent.mkdir()
    study.write_text(STUDY.format(repo=REPO))
    other = tmp_path / "other" / "study.toml"  # the same study at another parameter
    other.parent.mkdir()
    other.write_text(STUDY.format(repo=REPO).replace('param = "20000/10:1.5"', 'param = "30000"'))
    db = str(tmp_path / "s.sqlite")

    def run(study_file: Path, *options: str) -> None:
        done = bridgebench("run", str(study_file), "--mechanisms", "a,double", "-p", "3", *options, "--store", db,
                           "--report-dir", str(tmp_path / "results"), "--build-dir", str(tmp_path / "build"),
                           cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr

    def beside(campaign: int) -> dict | None:
        shown = bridgebench("report", str(campaign), "--format", "json", "--store", db, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)["beside_time"]

    run(study, "--metric", "instructions", "-i", "15")
    assert beside(1) is None
    alone = bridgebench("report", "1", "--format", "markdown", "--store", db, cwd=tmp_path)
    assert "counts beside time: no finished timed campaign of this study" in alone.stdout
    assert "else its param, which any timed campaign times" in alone.stdout
    run(study, "-i", "5")  # campaign 2: timed, the same work
    run(other, "-i", "5")  # campaign 3: timed, other work
    found = beside(1)
    assert found is not None and found["campaign"] == 2
    (pair,) = found["pairs"]
    assert pair["mechanism"] == "double" and 1.99 < pair["count_ratio"] < 2.01
    assert pair["time_ratio"]["value"] > 0
    markdown = bridgebench("report", "1", "--format", "markdown", "--store", db, cwd=tmp_path).stdout
    assert "## Counts beside time" in markdown and "counts beside time (timed campaign 2, 1 cells)" in markdown
    assert re.search(r"^\| warmup \| A with twice the work \| ×(1\.99\d*|2\.00\d*) \| ×", markdown, re.MULTILINE)
    assert beside(2) is None  # a timed campaign is never set beside anything

    # The power counts take a planted pair's truth from such counts (evidence/coverage.py --truths): per
    # benchmark, the counted ratio (×2 here), not the ratio given with --pair.
    def coverage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(REPO / "evidence" / "coverage.py"), db, *args],
                              capture_output=True, text=True, timeout=120, check=False)

    told = coverage("--pair", "a:double=1.5", "--truths", db)
    assert told.returncode == 0, told.stderr
    assert "| a : double, within a campaign, truths counted | 1.5 |" in told.stdout
    (counted,) = [x for x in told.stdout.splitlines() if x.startswith(f"counted in {db}, double over a: ")]
    assert re.fullmatch(r".*: warmup ×(1\.99\d*|2\.00\d*) \(.*\)", counted), counted
    assert "truths counted" not in coverage("--pair", "a:double=1.5").stdout
    none = coverage("--pair", "a:unbracketed=1.5", "--truths", db)
    assert none.returncode != 0
    assert "no finished campaign there counted instructions for both a and unbracketed" in none.stderr
