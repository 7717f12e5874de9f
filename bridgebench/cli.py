"""The `bridgebench` command: parse, call, print. No measuring or statistics happen here."""

from __future__ import annotations

import contextlib
import functools
import json
import signal
import sys
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bridgebench import __version__, baseline, environment, fleet, gate
from bridgebench import calibrate as calibration
from bridgebench import cli_views as commands
from bridgebench.build import BuildResult, build_study, default_root
from bridgebench.campaign import engine, kinds, timing
from bridgebench.campaign import load as load_campaign
from bridgebench.campaign.kind import CampaignError, CheckRow, Kind
from bridgebench.campaign.kinds import LOAD, TIMING
from bridgebench.compare import DiffError, compare
from bridgebench.load.driver import DriverError
from bridgebench.options import SEQUENTIAL, Options, read
from bridgebench.report import TERMINAL, tables
from bridgebench.report import diff as diff_report
from bridgebench.runner import OK, Execution, Task
from bridgebench.selftest import FAIL as SELFTEST_FAIL
from bridgebench.selftest import INCONCLUSIVE as SELFTEST_INCONCLUSIVE
from bridgebench.selftest import Finding, rejudge, run_selftest
from bridgebench.store import Store, StoreError, StoreMissing, StoreWriteError
from bridgebench.study import Study, StudyError, all_studies, find_study, load_study

# Exit codes that mean something to a script.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2  # bad input: a malformed study file, an unknown name, a store that cannot be used
EXIT_CHECK_FAILED = 3  # mechanisms disagree on the answer, or cannot compute it: nothing was timed
EXIT_FAILED_EXECUTIONS = 4  # the campaign completed, but some process executions failed (recorded)
EXIT_SELFTEST_WRONG = 5  # the self-test found a wrong verdict
EXIT_STORE_WRITE = 6  # the store could not be written mid-run (disk full, locked, read-only); the rest is kept
EXIT_GATE = 7  # diff --fail-on: some benchmark's verdict is one the gate fails on
EXIT_INTERRUPTED = 130

# Help is plain text: rich markup would eat the TOML tables help and errors name ([load], [budget]).
app = typer.Typer(help="Measure what it costs to run user code through each mechanism, and whether the "
                  "difference is real.", no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None)
out = Console()
err = Console(stderr=True)


def _print_version(asked: bool) -> None:
    if asked:
        out.print(f"bridgebench {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                   help="Print bridgebench's version and exit.")] = False) -> None:
    """Measure what it costs to run user code through each mechanism, and whether the difference is real."""

StoreOpt = Annotated[str, typer.Option("--store", envvar="BRIDGEBENCH_STORE", help="The results store: an SQLite "
                                       "file, or a PostgreSQL server as postgresql://user@host/db (password from "
                                       "PGPASSWORD, ~/.pgpass or PGSERVICE).")]
DEFAULT_STORE = "results/bridgebench.sqlite"
REPORT_FORMATS = tuple(dict.fromkeys((TERMINAL, *(f for k in kinds.KINDS.values() for f in k.formats))))
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


# The options `run` and `enqueue` share: what a campaign is.
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
PairingOpt = Annotated[str | None, typer.Option(
    "--pairing", metavar="lockstep|sequential", help="lockstep (timed, with a baseline: the default): a "
    "benchmark's mechanisms run as live processes on one CPU taking turns iteration by iteration; sequential: "
    "one process execution after another.")]
LayoutOpt = Annotated[str | None, typer.Option(
    "--layout", metavar="drawn|fixed", help="drawn (timed: the default): each process execution draws where "
    "its code and data land in memory; fixed: where the paths put them.")]


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _load(name: str) -> Study:
    try:
        return load_study(find_study(name))
    except StudyError as e:
        fail(str(e))


def _open_or_fail(location: str) -> Store:
    """An existing store, or StoreMissing; any other problem with it is the usual one-line error."""
    try:
        return Store(location, create=False)
    except StoreMissing:
        raise
    except StoreError as e:
        fail(str(e))


def _store(location: str, create: bool = True) -> Store:
    """Open the store; read-only commands pass create=False so a mistyped path is an error, not a new
    empty store."""
    try:
        return Store(location, create=create)
    except StoreError as e:
        fail(str(e))


def _writable_folder(folder: Path, option: str) -> None:
    """Check before a campaign, not after it, that its reports can be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".bridgebench-probe-"):
            pass
    except OSError as e:
        fail(f"{option} {folder}: cannot write reports there: {e.strerror}")


def _until(value: str | None) -> tuple[float | None, bool | None]:
    """`--until ci=2%` (or ci=0.02, or 2%): the CI half-width, as a share of the estimate, that settles a cell;
    `--until decided`: a cell settles when its ratio to the baseline is decided (until_decided)."""
    if value is None:
        return None, None
    if value.strip().lower() == "decided":
        return None, True
    try:
        share = gate.fraction(value.strip().lower().removeprefix("ci="))
    except ValueError:
        fail(f"--until {value!r}: expected ci=SHARE (e.g. ci=2% or ci=0.02) or decided")
    return share, False


def _adaptive(until: str | None, max_executions: int | None, max_time: str | None
              ) -> tuple[float | None, int | None, float | None, bool | None]:
    """The adaptive options as timing.options_for takes them: until_ci, the cap, max_time_s, until_decided."""
    until_ci, until_decided = _until(until)
    return until_ci, max_executions, _seconds(max_time, "--max-time"), until_decided


def _seconds(value: str | None, option: str) -> float | None:
    """600, 600s, 10m or 1h."""
    if value is None:
        return None
    text = value.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:])
    try:
        return float(text[:-1] if scale else text) * (scale or 1)
    except ValueError:
        fail(f"{option} {value!r}: expected seconds, or a number with s, m or h (600, 10m, 1h)")


def _emit(output: Path | None, format_: str, show: Callable[[Console], None], render: Callable[[], str]) -> None:
    """Print a result on the terminal (rich) or as text in a file format, to -o FILE or stdout."""
    try:
        if format_ == "terminal":
            with output.open("w") if output else nullcontext(None) as f:
                show(Console(file=f) if f else out)
            return
        text = render()
        if output:
            output.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    except OSError as e:
        fail(f"-o {output}: cannot write: {e.strerror}")


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _build(study: Study, build_dir: Path | None, mechanisms: list[str] | None, quiet: bool
           ) -> dict[str, BuildResult]:
    build_dir = build_dir or default_root(study)
    with err.status(f"building {study.name}…") if not quiet else nullcontext():
        builds = build_study(study, build_dir, mechanisms)
    if not quiet:
        err.print(commands.builds_table(study, builds))
    return builds


def _check(kind: Kind, study: Study, builds: dict[str, BuildResult], options: Options, quiet: bool
           ) -> list[CheckRow]:
    def on_row(row: CheckRow) -> None:
        if not quiet and row.status != "agrees":
            err.print(f"  [red]{row.status}[/]: " + escape(f"{row.benchmark} on {row.mechanism}: {row.detail}"),
                      highlight=False)

    checking, passed = kind.check_lines(study, options)
    with err.status(escape(checking)) if not quiet else nullcontext():
        rows = kind.check(study, builds, options, on_row)
    if not quiet and all(r.status == "agrees" for r in rows):
        err.print("[green]check passed[/]: " + escape(passed))
    return rows


def _build_and_check(kind: Kind, study: Study, options: Options, build_dir: Path | None, quiet: bool
                     ) -> tuple[dict[str, BuildResult], list[CheckRow]]:
    """What a new campaign needs first: its mechanisms built and their answers agreeing (else exit)."""
    builds = _build(study, build_dir, list(options.mechanisms), quiet=quiet)
    if not any(b.available for b in builds.values()):
        fail(f"{study.name}: no mechanism could be built; see the reasons above")
    rows = _check(kind, study, builds, options, quiet=quiet)
    if any(r.status != "agrees" for r in rows):
        fail(_check_failure_message(rows), EXIT_CHECK_FAILED)
    return builds, rows


def _check_failure_message(rows: list[CheckRow]) -> str:
    bad = [r for r in rows if r.status != "agrees"]
    first = bad[0]
    return (f"answer check failed for {len(bad)} benchmark × mechanism pair(s), e.g. {first.benchmark} on "
            f"{first.mechanism}: {first.status} ({first.detail}); nothing was timed")


@app.command("list")
def list_(store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """List the studies, and the campaigns in the store."""
    studies = []
    for path in all_studies():
        try:
            s = load_study(path)
            studies.append({"name": s.name, "title": s.title, "mechanisms": list(s.mechanisms),
                            "benchmarks": list(s.benchmarks), "path": str(path)})
        except StudyError as e:
            studies.append({"name": path.parent.name, "error": str(e), "path": str(path)})
    campaigns = []
    store = None
    with contextlib.suppress(StoreMissing):  # no store yet: only the studies
        store = _open_or_fail(store_path)
    if store is not None:
        campaigns = [{"id": c.id, "study": c.study, "state": c.state, "created": c.created,
                      "budget": read(c).options.budget, "machine": c.machine} for c in store.campaigns()]
    if as_json:
        _print_json({"studies": studies, "campaigns": campaigns})
        return
    for table in commands.list_tables(studies, campaigns, store.path if store else store_path):
        out.print(table)


@app.command()
def build(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
          mechanisms: Annotated[str | None, typer.Option(help="Comma-separated mechanisms.")] = None,
          build_dir: StudyBuildDirOpt = None,
          as_json: JsonOpt = False) -> None:
    """Build a study's mechanisms (cached); say which are unavailable and why."""
    study = _load(study_name)
    builds = _build(study, build_dir, _split(mechanisms), quiet=as_json)
    if as_json:
        _print_json([{"mechanism": b.mechanism, "available": b.available, "reason": b.reason,
                      "version": b.version, "cached": b.cached} for b in builds.values()])


@app.command()
def check(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
          benchmarks: Annotated[str | None, typer.Option(help="Comma-separated benchmarks.")] = None,
          mechanisms: Annotated[str | None, typer.Option(help="Comma-separated mechanisms.")] = None,
          build_dir: StudyBuildDirOpt = None,
          as_json: JsonOpt = False) -> None:
    """Build, then check that every mechanism computes the same answer (exit 3 if not): each probe on every
    benchmark, and each server's answer to every request, as `load` checks it first."""
    study = _load(study_name)
    chosen = _split(mechanisms)
    try:
        parts = _check_parts(study, _split(benchmarks), chosen)
    except CampaignError as e:
        fail(str(e))
    builds = _build(study, build_dir, list(dict.fromkeys(m for _, o in parts for m in o.mechanisms)), quiet=as_json)
    rows = [row for kind, opts in parts for row in _check(kind, study, builds, opts, quiet=as_json)]
    if as_json:
        _print_json([r.__dict__ for r in rows])
    if any(r.status != "agrees" for r in rows):
        fail(_check_failure_message(rows), EXIT_CHECK_FAILED)


def _check_parts(study: Study, benchmarks: list[str] | None, mechanisms: list[str] | None
                 ) -> list[tuple[Kind, Options]]:
    """What `check` checks: the probes' answers (a study with benchmarks timed in iterations) and the servers'
    (a study with a [load]), each for the mechanisms chosen among its own."""
    unknown = [m for m in mechanisms or [] if m not in study.mechanisms]
    if unknown:
        raise CampaignError(f"{study.name}: no mechanism {', '.join(unknown)} (has: {', '.join(study.mechanisms)})")
    servers = [m for m in mechanisms or [] if study.mechanisms[m].is_server]
    probes = [m for m in mechanisms or [] if not study.mechanisms[m].is_server]
    parts: list[tuple[Kind, Options]] = []
    if study.budgets and study.benchmarks and (mechanisms is None or probes):
        parts.append((TIMING, timing.options_for(study, "default", benchmarks, probes or None)))
    if study.load is not None and (mechanisms is None or servers) and not benchmarks:
        parts.append((LOAD, load_campaign.options_for(study, "default", servers or None)))
    if not parts:
        raise CampaignError(f"{study.name}: nothing to check among {', '.join(mechanisms or benchmarks or [])}")
    return parts


def _with_progress(kind: Kind, study: Study, store: Store, campaign_id: int, options: Options,
                   builds: dict[str, BuildResult], quiet: bool) -> None:
    """Run what is pending under a progress bar that says which executions failed as they fail."""
    total = len(store.planned(campaign_id))
    done = total - len(store.pending(campaign_id))
    log = not quiet and not err.is_terminal  # a pipe or a file: a line an execution instead of a bar
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=err, disable=quiet or log, transient=False) as progress:
        bar = progress.add_task(f"{study.name}", total=total, completed=done)
        stored = [done]

        def on_execution(task: Task, run: Execution) -> None:
            # An adaptive budget adds rounds as it goes: the total is what is planned now.
            planned = len(store.planned(campaign_id))
            progress.update(bar, advance=1, total=planned,
                            description=f"{study.name}: {task.benchmark} / {task.mechanism}")
            stored[0] += 1
            if log:
                err.print(escape(f"[{stored[0]}/{planned}] {study.name}: {task.benchmark} / {task.mechanism} "
                                 f"(process execution {task.pexec + 1}): {kind.summary(run)}"
                                 + (f": {run.detail}" if run.status != OK else "")),
                          highlight=False, soft_wrap=True)
            elif run.status != OK:
                progress.console.print(f"  [yellow]{run.status}[/]: " + escape(
                    f"{task.benchmark} on {task.mechanism} (process execution {task.pexec + 1}): {run.detail}"),
                    highlight=False)

        engine.run_pending(store, kind, study, campaign_id, options, builds, on_execution)


def _signals_stop_the_run() -> None:
    """SIGINT and SIGTERM always stop a run cleanly (the execution in flight is killed and discarded), also
    when a shell started it in the background with SIGINT ignored, as POSIX shells do for `cmd &`."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _write_reports(kind: Kind, result: Any, store: Store, stem: str, report_dir: Path) -> list[Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for format_, suffix in kind.written_after_a_run.items():
        path = report_dir / f"{stem}.{suffix}"
        path.write_text(kind.formats[format_](result, store), encoding="utf-8")
        written.append(path)
    return written


def _campaign(kind: Kind, study_name: str, new_options: Callable[[Study], Options], resume: bool,
              campaign_id: int | None, report_dir: Path, build_dir: Path | None, store_path: str, as_json: bool,
              seed: int | None = None, exclude_disturbed: bool = False, wide: bool = False) -> None:
    """`run` and `load`: build, check answers and start a campaign of this kind, or resume one; run what is
    pending; analyse; write the reports and print the result."""
    study = _load(study_name)
    _writable_folder(report_dir, "--report-dir")
    try:  # options a study cannot take are refused before a store is opened (or created)
        chosen = None if resume else new_options(study)
    except CampaignError as e:
        fail(str(e))
    store = _store(store_path)
    _signals_stop_the_run()
    with engine.session() as held:
        try:
            if chosen is None:
                options = held.resume(store, kind, study, campaign_id)
                builds = _build(study, build_dir, list(options.mechanisms), quiet=as_json)
                assert held.campaign_id is not None  # resume() chose one or raised
                engine.verify_builds(store, held.campaign_id, builds)
            else:
                options = chosen
                builds, rows = _build_and_check(kind, study, options, build_dir, as_json)
                held.start(store, kind, study, options, builds, rows)
            cid = held.campaign_id
            assert cid is not None
            _with_progress(kind, study, store, cid, options, builds, quiet=as_json)
            result = kind.analyse(store, cid, seed=seed, exclude_disturbed=exclude_disturbed)
        except (CampaignError, StoreError, DriverError) as e:
            fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
        except KeyboardInterrupt:
            if held.campaign_id is None:
                err.print("\ninterrupted before the campaign started: nothing was timed or stored", highlight=False)
            else:
                stored = len(store.done_seqs(held.campaign_id))
                err.print(f"\ninterrupted: {stored} {kind.unit} of campaign {held.campaign_id} are stored; continue "
                          f"with `bridgebench {kind.command} {study_name} --resume`", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
    try:
        written = _write_reports(kind, result, store, f"{study.name}-{cid}", report_dir)
    except OSError as e:
        fail(f"--report-dir {report_dir}: cannot write the reports: {e.strerror} (the campaign is stored; "
             f"`bridgebench report {cid}` writes them again)")
    if as_json:
        _print_json(result.to_json())
    else:
        kind.show(result, out, wide)
        err.print("reports: " + ", ".join(str(p) for p in written), highlight=False)
    failed = kind.failed(result)
    if failed:
        fail(failed, EXIT_FAILED_EXECUTIONS)


@app.command()
def run(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
        quick: QuickOpt = False, budget: BudgetOpt = "default", process_executions: ExecutionsOpt = None,
        iterations: IterationsOpt = None, timeout: TimeoutOpt = None, benchmarks: BenchmarksOpt = None,
        mechanisms: MechanismsOpt = None, random_order: RandomOrderOpt = False, seed: SeedOpt = 0,
        wait_quiet: Annotated[float, typer.Option("--wait-quiet", help="Before each process execution, wait up "
                                                  "to SECONDS (alone: 60) for a quiet machine; the wait is "
                                                  "recorded.", metavar="[SECONDS]")] = 0.0,
        exclude_disturbed: ExcludeOpt = False,
        until: Annotated[str | None, typer.Option("--until", help="Adaptive: more rounds for each benchmark × "
                                                  "mechanism until its 99% CI half-width is at most this share of "
                                                  "its estimate and its class holds, e.g. ci=2%; or, with "
                                                  "'decided', until its ratio to the baseline is decided.",
                                                  metavar="ci=SHARE|decided")] = None,
        max_time: Annotated[str | None, typer.Option("--max-time", help="Adaptive: stop when the process "
                                                     "executions have taken this long (600, 10m, 1h).")] = None,
        max_executions: Annotated[int | None, typer.Option("--max-executions", min=1, help="Adaptive: at most "
                                                           "this many process executions per cell.")] = None,
        metric: MetricOpt = None, pairing: PairingOpt = None, layout: LayoutOpt = None,
        resume: Annotated[bool, typer.Option("--resume", help="Continue the latest unfinished campaign.")] = False,
        campaign_id: Annotated[int | None, typer.Option("--campaign", help="With --resume: which one.")] = None,
        report_dir: Annotated[Path, typer.Option(help="Where the reports are written.")] = Path("results"),
        build_dir: StudyBuildDirOpt = None,
        store_path: StoreOpt = DEFAULT_STORE,
        as_json: JsonOpt = False, wide: WideOpt = False) -> None:
    """Build, check answers, run the campaign (or resume it), analyse, and report."""
    def options(study: Study) -> Options:
        return timing.options_for(study, "quick" if quick else budget, _split(benchmarks), _split(mechanisms),
                                  process_executions, iterations, timeout, random_order, seed, wait_quiet,
                                  *_adaptive(until, max_executions, max_time), metric=metric, pairing=pairing,
                                  layout_=layout)

    _campaign(TIMING, study_name, options, resume, campaign_id, report_dir, build_dir, store_path, as_json, seed,
              exclude_disturbed, wide)


@app.command()
def load(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
         quick: QuickOpt = False,
         budget: Annotated[str, typer.Option(help="A load budget named in the study's [load].")] = "default",
         process_executions: ExecutionsOpt = None,
         duration: Annotated[float | None, typer.Option(help="Seconds recorded per load run.", min=0.001)] = None,
         warmup: Annotated[float | None, typer.Option(help="Seconds sent, not recorded, before.", min=0)] = None,
         mechanisms: Annotated[str | None, typer.Option(help="Comma-separated servers.")] = None,
         until: Annotated[str | None, typer.Option("--until", help="Adaptive: more runs for each phase × server "
                                                   "until the 99% CI half-widths of its achieved rate and its "
                                                   "server CPU per request are at most this share, e.g. ci=5%.",
                                                   metavar="ci=SHARE")] = None,
         max_time: Annotated[str | None, typer.Option("--max-time", help="Adaptive: stop adding runs when the "
                                                      "runs have taken this long (600, 10m, 1h).")] = None,
         max_executions: Annotated[int | None, typer.Option("--max-executions", min=1, help="Adaptive: at most "
                                                            "this many runs per phase × server.")] = None,
         resume: Annotated[bool, typer.Option("--resume", help="Continue the latest unfinished load "
                                              "campaign.")] = False,
         campaign_id: Annotated[int | None, typer.Option("--campaign", help="With --resume: which one.")] = None,
         report_dir: Annotated[Path, typer.Option(help="Where the reports are written.")] = Path("results"),
         build_dir: StudyBuildDirOpt = None,
         store_path: StoreOpt = DEFAULT_STORE,
         as_json: JsonOpt = False) -> None:
    """Load a study's servers: build, check each request's answer, a closed-loop saturation phase, then
    constant rates at fractions of it (and above it), every run a fresh server; analyse and report."""
    until_ci, until_decided = _until(until)
    if until_decided:
        fail("--until decided: a load campaign settles its cells by their intervals; give --until ci=SHARE")

    def options(study: Study) -> Options:
        return load_campaign.options_for(study, "quick" if quick else budget, _split(mechanisms), process_executions,
                                         duration, warmup, until_ci, max_executions, _seconds(max_time, "--max-time"))

    _campaign(LOAD, study_name, options, resume, campaign_id, report_dir, build_dir, store_path, as_json)


def _kind(store: Store, campaign_id: int) -> Kind:
    """The kind of a stored campaign (timing, when there is no such campaign: the command then says so)."""
    try:
        return kinds.of(store.campaign(campaign_id))
    except StoreError:
        return TIMING


@app.command()
def enqueue(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
            quick: QuickOpt = False, budget: BudgetOpt = "default", process_executions: ExecutionsOpt = None,
            iterations: IterationsOpt = None, timeout: TimeoutOpt = None, benchmarks: BenchmarksOpt = None,
            mechanisms: MechanismsOpt = None, random_order: RandomOrderOpt = False, seed: SeedOpt = 0,
            metric: MetricOpt = None, build_dir: StudyBuildDirOpt = None,
            store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Build, check answers and plan a campaign here, and put its process executions on the store's queue
    for `bridgebench worker` on any machine (a PostgreSQL store)."""
    study = _load(study_name)
    store = _store(store_path)
    try:
        fleet.require_postgres(store)  # before building anything
        options = timing.options_for(study, "quick" if quick else budget, _split(benchmarks), _split(mechanisms),
                                     process_executions, iterations, timeout, random_order, seed, metric=metric,
                                     pairing=SEQUENTIAL)  # a fleet's workers each run single executions
        fleet.refuse_a_second(store, study, options)  # before building; enqueue checks again, under a lock
        builds, rows = _build_and_check(TIMING, study, options, build_dir, as_json)
        cid = fleet.enqueue(store, study, options, builds, rows)
    except (CampaignError, fleet.FleetError, StoreError) as e:
        fail(str(e))
    planned = len(store.planned(cid))
    if as_json:
        _print_json({"campaign": cid, "planned": planned})
    else:
        out.print(f"campaign {cid} of {study.name}: {planned} process executions queued in {escape(store.path)}; "
                  f"run `bridgebench worker` on each machine, `bridgebench status {cid}` to follow", highlight=False)


@app.command()
def worker(store_path: StoreOpt = DEFAULT_STORE,
           concurrency: Annotated[int, typer.Option(min=1, help="Jobs at once in this process (timed runs on "
                                                     "one machine still take turns).")] = 1,
           until_done: Annotated[bool, typer.Option("--until-done", help="Stop when nothing is left to run, "
                                                    "instead of waiting for more.")] = False,
           campaign_id: Annotated[int | None, typer.Option("--campaign", help="With --until-done: stop when this "
                                                           "campaign is done.")] = None,
           build_dir: StudyBuildDirOpt = None) -> None:
    """Run queued process executions, one at a time, storing each as it ends (SIGINT/SIGTERM: stop after
    the one in hand)."""
    store = _store(store_path, create=False)
    try:
        fleet.run_worker(store, build_dir, concurrency=concurrency, until_done=until_done, campaign_id=campaign_id)
    except (fleet.FleetError, StoreError) as e:
        fail(str(e))
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


@app.command()
def status(campaign_id: Annotated[int | None, typer.Argument(metavar="[CAMPAIGN]")] = None,
           store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Where a campaign stands: planned, queued, running, stored and failed, per machine, with an ETA."""
    store = _store(store_path, create=False)
    try:
        st = fleet.status(store, campaign_id if campaign_id is not None else fleet.latest_campaign(store))
    except StoreError as e:
        fail(str(e))
    if as_json:
        _print_json(asdict(st))
        return
    commands.status(st, out)


def _campaign_arg(store: Store, campaign_id: int | None, study: str | None) -> int:
    if campaign_id is not None:
        return campaign_id
    latest = store.latest_campaign(study)
    if latest is None:
        fail(f"no campaign in {store.path}" + (f" for study {study}" if study else ""))
    return latest.id


@app.command("analyse")
def analyse_(campaign_id: Annotated[int | None, typer.Argument(metavar="[CAMPAIGN]")] = None,
             study: Annotated[str | None, typer.Option(help="The latest campaign of this study.")] = None,
             seed: Annotated[int | None, typer.Option(help="Bootstrap seed (default: the campaign's).")] = None,
             exclude_disturbed: ExcludeOpt = False,
             store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False, wide: WideOpt = False) -> None:
    """(Re)compute the analysis of a campaign from its stored iterations."""
    store = _store(store_path, create=False)
    try:
        cid = _campaign_arg(store, campaign_id, study)
        kind = _kind(store, cid)
        result = kind.analyse(store, cid, seed=seed, exclude_disturbed=exclude_disturbed)
    except (StoreError, DriverError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    if as_json:
        _print_json(result.to_json())
    else:
        kind.show(result, out, wide)


@app.command()
def report(campaign_id: Annotated[int | None, typer.Argument(metavar="[CAMPAIGN]")] = None,
           study: Annotated[str | None, typer.Option(help="The latest campaign of this study.")] = None,
           format_: Annotated[str, typer.Option("--format", help=f"One of: {', '.join(REPORT_FORMATS)}.")]
           = "terminal",
           output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file.")] = None,
           exclude_disturbed: ExcludeOpt = False,
           store_path: StoreOpt = DEFAULT_STORE, wide: WideOpt = False) -> None:
    """Show a campaign's results (analysing it first if needed)."""
    if format_ not in REPORT_FORMATS:
        fail(f"--format: expected one of {', '.join(REPORT_FORMATS)}, got {format_!r}")
    if output and not output.parent.is_dir():
        fail(f"-o {output}: no folder {output.parent}")
    store = _store(store_path, create=False)
    try:
        cid = _campaign_arg(store, campaign_id, study)
        kind = _kind(store, cid)
        if format_ not in (TERMINAL, *kind.formats):
            fail(f"--format {format_}: a {kind.noun}'s report is one of: terminal, {', '.join(kind.formats)}")
        result = kind.current(store, cid, exclude_disturbed)
    except (StoreError, DriverError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    _emit(output, format_, lambda console: kind.show(result, console, wide),
          lambda: kind.formats[format_](result, store))


@app.command("export")
def export_(campaign_id: Annotated[int, typer.Argument(metavar="CAMPAIGN")],
            output: Annotated[Path, typer.Option("-o", "--output", help="The baseline file to write (new; "
                                                 "e.g. base.bbx).")],
            store_path: StoreOpt = DEFAULT_STORE) -> None:
    """Write a campaign to a portable baseline file, for `diff FILE CAMPAIGN` on another store (a CI job)."""
    store = _store(store_path, create=False)
    try:
        written = baseline.export(store, campaign_id, output)
    except (baseline.BaselineError, StoreError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    out.print(f"{written}: campaign {campaign_id}, a baseline for `bridgebench diff {written} CAMPAIGN`",
              highlight=False, soft_wrap=True)


def _side(spec: str, opened: Callable[[str | None], tuple[Store, int | None]]) -> tuple[Store, int, str | None, str]:
    """A diff side: a campaign of the store (3, 3:luajit) or a baseline file (base.bbx, base.bbx:luajit);
    its store (each opened once: `opened(None)` the store, `opened(path)` a baseline file), campaign,
    mechanism and the name the report gives it."""
    named = baseline.file_side(spec)
    if named:
        path, mechanism = named
        store, campaign = opened(path)
        assert campaign is not None
        return store, campaign, mechanism, Path(path).name
    campaign, _, mechanism = spec.partition(":")
    if not campaign.isdigit():
        fail(f"{spec!r}: expected CAMPAIGN, CAMPAIGN:MECHANISM or a baseline file, e.g. 3, 3:luajit or base.bbx")
    return opened(None)[0], int(campaign), mechanism or None, campaign


@app.command()
def diff(a: Annotated[str, typer.Argument(metavar="A", help="CAMPAIGN, CAMPAIGN:MECHANISM or a baseline file "
                                         "(base.bbx, base.bbx:MECHANISM)")],
         b: Annotated[str, typer.Argument(metavar="B", help="CAMPAIGN, CAMPAIGN:MECHANISM or a baseline file")],
         cross_machine: Annotated[bool, typer.Option("--cross-machine",
                                                     help="Compare runs from different machines.")] = False,
         exclude_disturbed: ExcludeOpt = False,
         format_: Annotated[str, typer.Option("--format", help=f"One of: {', '.join(diff_report.FORMATS)}.")]
         = "terminal",
         output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file.")] = None,
         fail_on: Annotated[list[str] | None, typer.Option(
             "--fail-on", metavar="VERDICT[,VERDICT]", help="Exit 7 when a benchmark's verdict is one of these "
             "(faster, slower, equivalent, different, undecided): a gate for CI.")] = None,
         margin: Annotated[str | None, typer.Option(
             "--margin", metavar="SHARE", help="The margin within which a ratio is equivalent (2% or 0.02); "
             "default: the study's.")] = None,
         store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Is the difference real? Compare two campaigns, or two mechanisms (3:luajit 3:luajit2), or a baseline
    file exported elsewhere with a campaign (base.bbx 4)."""
    try:
        gate_on = gate.verdicts(fail_on) if fail_on else ()
        within = gate.share(margin) if margin is not None else None
    except gate.GateError as e:
        fail(str(e))
    format_ = "json" if as_json else format_
    if format_ not in diff_report.FORMATS:
        fail(f"--format: expected one of {', '.join(diff_report.FORMATS)}, got {format_!r}")
    if output and not output.parent.is_dir():
        fail(f"-o {output}: no folder {output.parent}")

    @functools.cache
    def opened(path: str | None) -> tuple[Store, int | None]:
        if path is None:
            return _store(store_path, create=False), None
        try:
            return baseline.open_file(path)
        except baseline.BaselineError as e:
            fail(str(e))

    (store, ca, ma, name_a), (store_b, cb, mb, name_b) = _side(a, opened), _side(b, opened)
    if (ma is None) != (mb is None):
        fail("name a mechanism on both sides (3:luajit 4:luajit2) or on neither (3 4)")
    others = [(c, k) for s, c in ((store, ca), (store_b, cb)) if (k := _kind(s, c)) is not TIMING]
    if others:
        (c, k), *_ = others
        fail(f"campaign {c} is a {k.noun}: its report compares its mechanisms (`bridgebench report {c}`); diff "
             "compares campaigns timed in iterations")
    try:
        comparisons, header = compare(store, ca, ma, cb, mb, cross_machine=cross_machine,
                                      exclude_disturbed=exclude_disturbed, margin=within, store_b=store_b,
                                      names=(name_a, name_b))
    except (StoreError, DiffError) as e:
        fail(str(e))
    _emit(output, format_, lambda console: diff_report.show(comparisons, header, console),
          lambda: diff_report.render(format_, comparisons, header))
    failed = gate.failing(comparisons, gate_on)
    if failed:
        err.print(escape(failed), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_GATE)


@app.command()
def selftest(repetitions: Annotated[int, typer.Option("-n", "--repetitions", min=1)] = 1,
             budget: Annotated[str, typer.Option(help="A budget of studies/selftest.")] = "default",
             build_dir: BuildDirOpt = Path("build"),
             wait_quiet: Annotated[float, typer.Option("--wait-quiet", help="Before each process execution, wait "
                                                       "up to SECONDS (alone: 60) for a quiet machine.",
                                                       metavar="[SECONDS]")] = 0.0,
             again: Annotated[bool, typer.Option("--rejudge", help="Run nothing: judge the self-test campaigns "
                                                 "already in the store again, under the current rules.")] = False,
             store_path: Annotated[str, typer.Option("--store", help="The store for the self-test's runs (a "
                                                     "file or postgresql://…).")] = "results/selftest.sqlite",
             pairing: PairingOpt = None, as_json: JsonOpt = False) -> None:
    """Check bridgebench's verdicts on planted changes (A vs A, +5% work, warm-up, slowdown, no steady state);
    exit 5 if they are wrong on a quiet machine."""
    store = _store(store_path)
    _signals_stop_the_run()

    def on_finding(f: Finding) -> None:
        if not as_json and not f.ok:
            mark = "[yellow]wrong, flagged disturbed[/]" if f.disturbed else "[red]WRONG[/]"
            err.print(f"  {mark} " + escape(f"#{f.repetition} {f.check}: {f.subject}: expected {f.expected}, "
                                            f"found {f.found}"), highlight=False, soft_wrap=True)

    try:
        report = (rejudge(store, on_finding) if again
                  else run_selftest(store, build_dir, repetitions, budget, on_finding, wait_quiet, pairing))
    except (CampaignError, StoreError, DiffError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    except KeyboardInterrupt:
        err.print("\ninterrupted: the self-test gives no verdict", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    tallies = report.tallies()
    if as_json:
        _print_json({"verdict": report.verdict, "ok": report.verdict != SELFTEST_FAIL,
                     "tally": [t.__dict__ | {"verdict": t.verdict} for t in tallies],
                     "findings": [f.__dict__ for f in report.findings]})
    else:
        judged = len({f.campaign for f in report.findings})
        title = (f"Self-test, {judged} stored repetition(s) judged again" if again
                 else f"Self-test over {repetitions} repetition(s), budget '{budget}'")
        out.print(commands.selftest_table(title, tallies))
        out.print(commands.SELFTEST_LEGEND, style="dim", highlight=False)
        # The classification's δ: the self-test's flat workload is not the calibration's, so this checks it.
        for words in sorted({tables.delta_words(store.campaign(cid).config["options"])
                             for cid in {f.campaign for f in report.findings}}):
            out.print(f"planted classes judged with {words}", highlight=False, soft_wrap=True)
        if report.verdict == SELFTEST_INCONCLUSIVE:
            out.print("inconclusive: too few process executions ran on a quiet machine for the verdicts to mean "
                      "anything; see `bridgebench doctor`, or try `--wait-quiet`.", highlight=False, soft_wrap=True)
        else:
            out.print(f"self-test: {report.verdict}", highlight=False)
    if report.verdict == SELFTEST_FAIL:
        raise typer.Exit(EXIT_SELFTEST_WRONG)


@app.command()
def doctor(as_json: JsonOpt = False) -> None:
    """Say what makes this machine noisy for benchmarking, and how to fix it where one can. Never fails."""
    env = environment.capture()
    findings = environment.doctor(env)
    if as_json:
        _print_json({"environment": env, "findings": [f.__dict__ for f in findings]})
        return
    out.print(commands.doctor_table(findings))


@app.command()
def calibrate(store_location: StoreOpt = DEFAULT_STORE, build_dir: BuildDirOpt = Path("build"),
              executions: Annotated[int, typer.Option("-p", "--process-executions", min=2, max=1000,
                                                      help="Fresh processes of the constant program, per length.")]
              = calibration.EXECUTIONS,
              iterations: Annotated[list[int] | None, typer.Option(
                  "-i", "--iterations", min=50, max=100_000,
                  help="An execution length, in iterations (50 or more: they are classified); repeat for "
                       "several (default: 100, 250 and 700).")] = None,
              as_json: JsonOpt = False) -> None:
    """Measure how far this machine moves a constant program's speed by itself, at several execution lengths,
    and store the δ that follows at each with the machine: campaigns created on it afterwards classify each
    of their executions with the δ of the length nearest its own (methodology §3)."""
    store = _store(store_location)
    machine = calibration.this_machine()
    lengths = tuple(dict.fromkeys(iterations or calibration.LENGTHS))

    def progress(i: int, n: int, run: Execution) -> None:
        if not as_json:
            err.print(f"[{i + 1}/{executions}] constant program, {n} iterations: {run.status}, {run.wall_s:.2f} s",
                      highlight=False)

    _signals_stop_the_run()
    try:
        result = calibration.judge_lengths(
            calibration.measure(build_dir, executions, lengths, on_execution=progress), machine)
    except calibration.CalibrationError as e:  # the constant program failed to build or run
        fail(str(e), EXIT_FAILED_EXECUTIONS)
    except KeyboardInterrupt:
        err.print("\ninterrupted: nothing was stored", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    try:
        store.record_calibration(machine, result.created, result.to_json())
    except StoreError as e:
        fail(str(e), EXIT_STORE_WRITE)
    if as_json:
        _print_json(result.to_json())
        return
    for line in commands.calibration_lines(result):
        out.print(line, highlight=False, soft_wrap=True)


DEFAULT_WAIT_QUIET_S = 60.0


def _optional_values(argv: list[str]) -> list[str]:
    """`--wait-quiet` may stand alone (then it waits up to DEFAULT_WAIT_QUIET_S) or take seconds, as
    `--wait-quiet=30` or `--wait-quiet 30`; click options take a value or none, not either."""
    out = []
    for i, arg in enumerate(argv):
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if arg == "--wait-quiet" and not following.replace(".", "", 1).isdigit():
            arg = f"--wait-quiet={DEFAULT_WAIT_QUIET_S:g}"
        out.append(arg)
    return out


def main() -> None:
    sys.argv = _optional_values(sys.argv)
    app()


if __name__ == "__main__":
    main()
