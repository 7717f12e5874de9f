"""The options several commands share, and how their values are read: the CLI's vocabulary in one place."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from bridgebench import gate
from bridgebench.campaign import kinds
from bridgebench.report import TERMINAL
from bridgebench.timing.report import diff as diff_report


class OptionError(ValueError):
    """An option's value that cannot be read; one line, ready to print."""


StoreOpt = Annotated[str, typer.Option("--store", envvar="BRIDGEBENCH_STORE", help="The results store: an SQLite "
                                       "file, or a PostgreSQL server as postgresql://user@host/db (password from "
                                       "PGPASSWORD, ~/.pgpass or PGSERVICE).")]
DEFAULT_STORE = "results/bridgebench.sqlite"
MetricOpt = Annotated[str | None, typer.Option(
    "--metric", help="What each iteration measures: seconds (wall time), or instructions (counted under "
    "callgrind, with ASLR off and the environment pinned); default: the budget's.",
    metavar="seconds|instructions")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]
WideOpt = Annotated[bool, typer.Option("--wide", help="On a terminal, every table whole (folded where it does not "
                                       "fit), not each benchmark's verdicts first and the wide tables left to "
                                       "the report files.")]
ExcludeOpt = Annotated[bool, typer.Option("--exclude-disturbed", help="Leave out the process executions the "
                                          "disturbance audit flagged (the report says so).")]
StudyArg = Annotated[str, typer.Argument(metavar="STUDY")]
CampaignArg = Annotated[int | None, typer.Argument(metavar="[CAMPAIGN]")]
LatestOfOpt = Annotated[str | None, typer.Option("--study", help="The latest campaign of this study.")]
OutputOpt = Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file.")]

# What a campaign is: the options `run`, `load` and `enqueue` share.
QuickOpt = Annotated[bool, typer.Option("--quick", help="Use the study's quick budget.")]
BudgetOpt = Annotated[str, typer.Option(help="A budget named in the study file.")]
ExecutionsOpt = Annotated[int | None, typer.Option("-p", "--process-executions", min=1)]
IterationsOpt = Annotated[int | None, typer.Option("-i", "--iterations", min=1)]
TimeoutOpt = Annotated[float | None, typer.Option(help="Seconds per process execution (at most 86400).")]
BenchmarksOpt = Annotated[str | None, typer.Option(help="Comma-separated benchmarks.")]
MechanismsOpt = Annotated[str | None, typer.Option(help="Comma-separated mechanisms.")]
RandomOrderOpt = Annotated[bool, typer.Option("--random-order", help="Shuffle each round.")]
SeedOpt = Annotated[int, typer.Option(help="Seed for --random-order and the bootstrap.")]
BuildDirOpt = Annotated[Path, typer.Option(help="Where builds go.")]
StudyBuildDirOpt = Annotated[Path | None, typer.Option("--build-dir", help="Where builds go (default: build/ in the "
                                                      "repository for its own studies, build/ beside any other).")]
ReportDirOpt = Annotated[Path, typer.Option(help="Where the reports are written.")]
ResumeCampaignOpt = Annotated[int | None, typer.Option("--campaign", help="With --resume: which one.")]
MaxTimeOpt = Annotated[str | None, typer.Option("--max-time", help="Adaptive: stop when the process executions "
                                                "have taken this long (600, 10m, 1h). With --resume: raise the "
                                                "campaign's cap to this, even once it is complete, so that its "
                                                "cells stopped out of time go on.")]
PairingOpt = Annotated[str | None, typer.Option(
    "--pairing", metavar="lockstep|sequential", help="lockstep (timed, with a baseline: the default): a "
    "benchmark's mechanisms run as live processes on one CPU taking turns iteration by iteration; sequential: "
    "one process execution after another.")]
LayoutOpt = Annotated[str | None, typer.Option(
    "--layout", metavar="shared|drawn|fixed", help="shared (timed, in lock-step blocks: the default): each block "
    "draws where its members' code and data land in memory, one layout for all of them; drawn (timed, sequential: "
    "the default): each process execution draws its own; fixed: where the paths put them.")]
TurnsOpt = Annotated[str | None, typer.Option(
    "--turns", metavar="separate|interleaved|together|twins", help="How a lock-step block's members take their "
    "turns: the budget's `turns`, else separate: one whole turn after another; interleaved: the baseline and its "
    "twins (a mechanism's `twin`; else the members whose turns are equal) one iteration each in a drawn order, so "
    "their iterations are adjacent in time, the others alone and the baseline once more alone for them (on a slow "
    "day its A/A held, and it found a planted +2 % no more often than separate turns, less often where the "
    "baseline's turn alone made its rounds longer: methodology §13); twins: the baseline and its twins at "
    "the same time, the others alone and the baseline once more alone for them, every iteration timed by its "
    "processes' CPU time; "
    "together: every member at once, the scheduler sharing the CPU among them, each iteration timed by its "
    "processes' CPU time (methodology §13).")]
WaitQuietOpt = Annotated[float, typer.Option("--wait-quiet", help="Before each process execution, wait up to "
                                             "SECONDS (alone: 60) for a quiet machine; the wait is recorded.",
                                             metavar="[SECONDS]")]


# The options of one command each, named after it.
REPORT_FORMATS = tuple(dict.fromkeys((TERMINAL, *(f for k in kinds.KINDS.values() for f in k.formats))))
RunUntilOpt = Annotated[str | None, typer.Option("--until", help="Adaptive: more rounds for each benchmark × "
    "mechanism until its 99% CI half-width is at most this share "
    "of its estimate and its class holds, e.g. ci=2%; or, with "
    "'decided', until its ratio to the baseline is decided.",
    metavar="ci=SHARE|decided")]
RunMaxExecutionsOpt = Annotated[int | None, typer.Option("--max-executions", min=1, help="Adaptive: at most "
    "this many process executions per cell.")]
RunResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue the latest unfinished campaign (with "
                                            "--max-time, the latest campaign, with more time).")]
LoadBudgetOpt = Annotated[str, typer.Option(help="A load budget named in the study's [load].")]
LoadDurationOpt = Annotated[float | None, typer.Option(help="Seconds recorded per load run.", min=0.001)]
LoadWarmupOpt = Annotated[float | None, typer.Option(help="Seconds sent, not recorded, before.", min=0)]
LoadMechanismsOpt = Annotated[str | None, typer.Option(help="Comma-separated servers.")]
LoadUntilOpt = Annotated[str | None, typer.Option("--until", help="Adaptive: more runs for each phase × server "
    "until the 99% CI half-widths of its achieved rate and its "
    "server CPU per request are at most this share, e.g. ci=5%.",
    metavar="ci=SHARE")]
LoadMaxTimeOpt = Annotated[str | None, typer.Option("--max-time", help="Adaptive: stop adding runs when the "
    "runs have taken this long (600, 10m, 1h).")]
LoadMaxExecutionsOpt = Annotated[int | None, typer.Option("--max-executions", min=1, help="Adaptive: at most "
    "this many runs per phase × server.")]
LoadResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue the latest unfinished load "
    "campaign.")]
WorkerConcurrencyOpt = Annotated[int, typer.Option(min=1, help="Jobs at once in this process (timed runs on "
    "one machine still take turns).")]
WorkerUntilDoneOpt = Annotated[bool, typer.Option("--until-done", help="Stop when nothing is left to run, "
    "instead of waiting for more.")]
WorkerCampaignIdOpt = Annotated[int | None, typer.Option("--campaign", help="With --until-done: stop when this "
    "campaign is done.")]
AnalyseSeedOpt = Annotated[int | None, typer.Option(help="Bootstrap seed (default: the campaign's).")]
ReportFormatOpt = Annotated[str, typer.Option("--format", help=f"One of: {', '.join(REPORT_FORMATS)}.")]
ExportCampaignIdArg = Annotated[int, typer.Argument(metavar="CAMPAIGN")]
ExportOutputOpt = Annotated[Path, typer.Option("-o", "--output", help="The baseline file to write (new; "
    "e.g. base.bbx).")]
DiffAArg = Annotated[str, typer.Argument(metavar="A", help="CAMPAIGN, CAMPAIGN:MECHANISM or a baseline file "
    "(base.bbx, base.bbx:MECHANISM)")]
DiffBArg = Annotated[str, typer.Argument(metavar="B", help="CAMPAIGN, CAMPAIGN:MECHANISM or a baseline file")]
DiffCrossMachineOpt = Annotated[bool, typer.Option("--cross-machine",
    help="Compare runs from different machines.")]
DiffFormatOpt = Annotated[str, typer.Option("--format", help=f"One of: {', '.join(diff_report.FORMATS)}.")]
DiffFailOnOpt = Annotated[list[str] | None, typer.Option(
    "--fail-on", metavar="VERDICT[,VERDICT]", help="Exit 7 when a benchmark's verdict is one of these "
    "(faster, slower, equivalent, different, undecided): a gate for CI.")]
DiffMarginOpt = Annotated[str | None, typer.Option(
    "--margin", metavar="SHARE", help="The margin within which a ratio is equivalent (2% or 0.02); "
    "default: the study's.")]
SelftestRepetitionsOpt = Annotated[int, typer.Option("-n", "--repetitions", min=1)]
SelftestBudgetOpt = Annotated[str, typer.Option(help="A budget of studies/selftest.")]
SelftestAgainOpt = Annotated[bool, typer.Option("--rejudge", help="Run nothing: judge the self-test campaigns "
    "already in the store again, under the current rules.")]
SelftestStorePathOpt = Annotated[str, typer.Option("--store", help="The store for the self-test's runs (a "
    "file or postgresql://…).")]
CalibrateExecutionsOpt = Annotated[int, typer.Option("-p", "--process-executions", min=2, max=1000,
    help="Fresh processes of the constant program, per length.")]
CalibrateIterationsOpt = Annotated[list[int] | None, typer.Option(
    "-i", "--iterations", min=50, max=100_000,
    help="An execution length, in iterations (50 or more: they are classified); repeat for "
    "several (default: 100, 250 and 700).")]


def split(value: str | None) -> list[str] | None:
    """A comma-separated list, or None when not given."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def until(value: str | None) -> tuple[float | None, bool | None]:
    """`--until ci=2%` (or ci=0.02, or 2%): the CI half-width, as a share of the estimate, that settles a cell;
    `--until decided`: a cell settles when its ratio to the baseline is decided (until_decided)."""
    if value is None:
        return None, None
    if value.strip().lower() == "decided":
        return None, True
    try:
        share = gate.fraction(value.strip().lower().removeprefix("ci="))
    except ValueError:
        raise OptionError(f"--until {value!r}: expected ci=SHARE (e.g. ci=2% or ci=0.02) or decided") from None
    return share, False


def seconds(value: str | None, option: str) -> float | None:
    """600, 600s, 10m or 1h."""
    if value is None:
        return None
    text = value.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:])
    try:
        return float(text[:-1] if scale else text) * (scale or 1)
    except ValueError:
        raise OptionError(f"{option} {value!r}: expected seconds, or a number with s, m or h (600, 10m, 1h)") \
            from None


def adaptive(until_: str | None, max_executions: int | None, max_time: str | None
             ) -> tuple[float | None, int | None, float | None, bool | None]:
    """The adaptive options as timing.options_for takes them: until_ci, the cap, max_time_s, until_decided."""
    until_ci, until_decided = until(until_)
    return until_ci, max_executions, seconds(max_time, "--max-time"), until_decided


DEFAULT_WAIT_QUIET_S = 60.0


def optional_values(argv: list[str]) -> list[str]:
    """`--wait-quiet` may stand alone (then it waits up to DEFAULT_WAIT_QUIET_S) or take seconds, as
    `--wait-quiet=30` or `--wait-quiet 30`; click options take a value or none, not either."""
    out = []
    for i, arg in enumerate(argv):
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if arg == "--wait-quiet" and not following.replace(".", "", 1).isdigit():
            arg = f"--wait-quiet={DEFAULT_WAIT_QUIET_S:g}"
        out.append(arg)
    return out


def writable_folder(folder: Path, option: str) -> None:
    """Check before a campaign, not after it, that its reports can be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".bridgebench-probe-"):
            pass
    except OSError as e:
        raise OptionError(f"{option} {folder}: cannot write reports there: {e.strerror}") from None


def output_folder(output: Path | None) -> None:
    if output and not output.parent.is_dir():
        raise OptionError(f"-o {output}: no folder {output.parent}")

