"""The `bridgebench` command: parse, call, print. No measuring or statistics happen here."""

from __future__ import annotations

import contextlib
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

from bridgebench import campaign as camp
from bridgebench import environment, fleet
from bridgebench.analysis import WRONG_ANSWER, Series, analyse, current_analysis
from bridgebench.build import BuildResult, build_study
from bridgebench.compare import DiffError, compare
from bridgebench.load import analysis as load_analysis
from bridgebench.load import campaign as load_campaign
from bridgebench.load import report as load_report
from bridgebench.load.analysis import LoadAnalysis
from bridgebench.load.driver import DriverError
from bridgebench.report import FORMATS, TERMINAL, WRITTEN_AFTER_A_RUN, render, terminal
from bridgebench.report import diff as diff_report
from bridgebench.result import Analysis
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
EXIT_INTERRUPTED = 130

app = typer.Typer(help="Measure what it costs to run user code through each mechanism, and whether the "
                  "difference is real.", no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False)
out = Console()
err = Console(stderr=True)

StoreOpt = Annotated[str, typer.Option("--store", envvar="BRIDGEBENCH_STORE", help="The results store: an SQLite "
                                       "file, or a PostgreSQL server as postgresql://user@host/db (password from "
                                       "PGPASSWORD, ~/.pgpass or PGSERVICE).")]
DEFAULT_STORE = "results/bridgebench.sqlite"
REPORT_FORMATS = (TERMINAL, *FORMATS)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]
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


def _until(value: str | None) -> float | None:
    """`--until ci=2%` (or ci=0.02, or 2%): the CI half-width, as a share of the estimate, that settles a cell."""
    if value is None:
        return None
    text = value.strip().lower().removeprefix("ci=").strip()
    try:
        share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        fail(f"--until {value!r}: expected ci=SHARE, e.g. ci=2% or ci=0.02")
    return share


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


def _build(study: Study, build_dir: Path, mechanisms: list[str] | None, quiet: bool) -> dict[str, BuildResult]:
    with err.status(f"building {study.name}…") if not quiet else nullcontext():
        builds = build_study(study, build_dir, mechanisms)
    if not quiet:
        err.print(terminal.builds_table(study, builds))
    return builds


def _check(study: Study, builds: dict[str, BuildResult], benchmarks: tuple[str, ...], timeout_s: float,
           quiet: bool) -> list[camp.CheckRow]:
    def on_row(row: camp.CheckRow) -> None:
        if not quiet and row.status != "agrees":
            err.print(f"  [red]{row.status}[/]: " + escape(f"{row.benchmark} on {row.mechanism}: {row.detail}"),
                      highlight=False)

    with err.status(f"checking answers of {len(benchmarks)} benchmarks…") if not quiet else nullcontext():
        rows = camp.check(study, builds, benchmarks, timeout_s, on_row)
    bad = [r for r in rows if r.status != "agrees"]
    if not quiet and not bad:
        err.print(f"[green]check passed[/]: every available mechanism gave the same answer on {len(benchmarks)} "
                  "benchmarks")
    return rows


def _build_and_check(study: Study, options: camp.Options, build_dir: Path, quiet: bool
                     ) -> tuple[dict[str, BuildResult], list[camp.CheckRow]]:
    """What a new campaign needs first: its mechanisms built and their answers agreeing (else exit)."""
    builds = _build(study, build_dir, list(options.mechanisms), quiet=quiet)
    if not any(b.available for b in builds.values()):
        fail(f"{study.name}: no mechanism could be built; see the reasons above")
    rows = _check(study, builds, options.benchmarks, options.timeout_s, quiet=quiet)
    if any(r.status != "agrees" for r in rows):
        fail(_check_failure_message(rows), EXIT_CHECK_FAILED)
    return builds, rows


def _check_failure_message(rows: list[camp.CheckRow]) -> str:
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
                      "budget": c.config["options"]["budget"], "machine": c.machine} for c in store.campaigns()]
    if as_json:
        _print_json({"studies": studies, "campaigns": campaigns})
        return
    for table in terminal.list_tables(studies, campaigns, store.path if store else store_path):
        out.print(table)


@app.command()
def build(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
          mechanisms: Annotated[str | None, typer.Option(help="Comma-separated mechanisms.")] = None,
          build_dir: BuildDirOpt = Path("build"),
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
          build_dir: BuildDirOpt = Path("build"),
          as_json: JsonOpt = False) -> None:
    """Build, then check that every mechanism computes the same answer (exit 3 if not)."""
    study = _load(study_name)
    try:
        opts = camp.options_for(study, "default", _split(benchmarks), _split(mechanisms))
    except camp.CampaignError as e:
        fail(str(e))
    builds = _build(study, build_dir, list(opts.mechanisms), quiet=as_json)
    rows = _check(study, builds, opts.benchmarks, opts.timeout_s, quiet=as_json)
    if as_json:
        _print_json([r.__dict__ for r in rows])
    if any(r.status != "agrees" for r in rows):
        fail(_check_failure_message(rows), EXIT_CHECK_FAILED)


def _progress_runner(study: Study, store: Store, campaign_id: int, options: camp.Options,
                     builds: dict[str, BuildResult], quiet: bool) -> None:
    """Run the pending executions with a progress bar, saying which failed as they fail."""
    _with_progress(study, store, campaign_id, quiet,
                   lambda on_execution: camp.run_pending(store, study, campaign_id, options, builds, on_execution))


def _with_progress(study: Study, store: Store, campaign_id: int, quiet: bool,
                   run_pending: Callable[[Callable[[Task, Execution], None]], None]) -> None:
    """Call run_pending(on_execution) under a progress bar that says which executions failed as they fail
    (for iteration and load campaigns alike)."""
    total = len(store.planned(campaign_id))
    done = total - len(store.pending(campaign_id))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=err, disable=quiet, transient=False) as progress:
        bar = progress.add_task(f"{study.name}", total=total, completed=done)

        def on_execution(task: Task, run: Execution) -> None:
            # An adaptive budget adds rounds as it goes: the total is what is planned now.
            progress.update(bar, advance=1, total=len(store.planned(campaign_id)),
                            description=f"{study.name}: {task.benchmark} / {task.mechanism}")
            if run.status != OK:
                progress.console.print(f"  [yellow]{run.status}[/]: " + escape(
                    f"{task.benchmark} on {task.mechanism} (process execution {task.pexec + 1}): {run.detail}"),
                    highlight=False)

        run_pending(on_execution)


def _signals_stop_the_run() -> None:
    """SIGINT and SIGTERM always stop a run cleanly (the execution in flight is killed and discarded), also
    when a shell started it in the background with SIGINT ignored, as POSIX shells do for `cmd &`."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _write_reports(result: Analysis, store: Store, report_dir: Path) -> list[Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{result.campaign.study}-{result.campaign.id}"
    written = []
    for format_, suffix in WRITTEN_AFTER_A_RUN.items():
        path = report_dir / f"{stem}.{suffix}"
        path.write_text(render(format_, result, Series(store)), encoding="utf-8")
        written.append(path)
    return written


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
                                                  "its estimate and its class holds, e.g. ci=2%.",
                                                  metavar="ci=SHARE")] = None,
        max_time: Annotated[str | None, typer.Option("--max-time", help="Adaptive: stop when the process "
                                                     "executions have taken this long (600, 10m, 1h).")] = None,
        max_executions: Annotated[int | None, typer.Option("--max-executions", min=1, help="Adaptive: at most "
                                                           "this many process executions per cell.")] = None,
        resume: Annotated[bool, typer.Option("--resume", help="Continue the latest unfinished campaign.")] = False,
        campaign_id: Annotated[int | None, typer.Option("--campaign", help="With --resume: which one.")] = None,
        report_dir: Annotated[Path, typer.Option(help="Where the reports are written.")] = Path("results"),
        build_dir: BuildDirOpt = Path("build"),
        store_path: StoreOpt = DEFAULT_STORE,
        as_json: JsonOpt = False) -> None:
    """Build, check answers, run the campaign (or resume it), analyse, and report."""
    study = _load(study_name)
    _writable_folder(report_dir, "--report-dir")
    store = _store(store_path)
    _signals_stop_the_run()
    cid: int | None = None
    owner = None
    try:
        if resume:
            with store.planning():
                cid, options = camp.resumable(store, study, campaign_id)
                owner = store.claim(cid)
            builds = _build(study, build_dir, list(options.mechanisms), quiet=as_json)
            camp.verify_builds(store, cid, builds)
        else:
            budget_name = "quick" if quick else budget
            options = camp.options_for(study, budget_name, _split(benchmarks), _split(mechanisms),
                                       process_executions, iterations, timeout, random_order, seed, wait_quiet,
                                       _until(until), max_executions, _seconds(max_time, "--max-time"))
            builds, rows = _build_and_check(study, options, build_dir, as_json)
            with store.planning():
                cid = camp.start(store, study, options, builds, rows)
                owner = store.claim(cid)
        _progress_runner(study, store, cid, options, builds, quiet=as_json)
        result = analyse(store, cid, seed=seed, exclude_disturbed=exclude_disturbed)
        store.save_analysis(cid, result.to_json())
    except (camp.CampaignError, StoreError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    except KeyboardInterrupt:
        if cid is None:
            err.print("\ninterrupted before the campaign started: nothing was timed or stored", highlight=False)
        else:
            stored = len(store.done_seqs(cid))
            err.print(f"\ninterrupted: {stored} process executions of campaign {cid} are stored; continue with "
                      f"`bridgebench run {study_name} --resume`", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        if owner:
            owner.release()

    try:
        written = _write_reports(result, store, report_dir)
    except OSError as e:
        fail(f"--report-dir {report_dir}: cannot write the reports: {e.strerror} (the campaign is stored; "
             f"`bridgebench report {cid}` writes them again)")
    if as_json:
        _print_json(result.to_json())
    else:
        terminal.show(result, out)
        err.print("reports: " + ", ".join(str(p) for p in written), highlight=False)
    failures = result.failures()
    if failures:
        wrong = sum(f.status == WRONG_ANSWER for f in failures)
        fail(f"{len(failures)} process execution(s) failed (recorded; see the Failed column)"
             + (f", {wrong} of them with a wrong answer in timed runs" if wrong else ""), EXIT_FAILED_EXECUTIONS)


def _load_report(result: LoadAnalysis, console: Console) -> None:
    load_report.show(result, console)


def _write_load_reports(result: LoadAnalysis, report_dir: Path) -> list[Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{result.campaign['study']}-{result.campaign['id']}"
    written = []
    for format_, suffix in load_report.SUFFIXES.items():
        path = report_dir / f"{stem}.{suffix}"
        path.write_text(load_report.FORMATS[format_](result), encoding="utf-8")
        written.append(path)
    return written


@app.command()
def load(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
         quick: QuickOpt = False,
         budget: Annotated[str, typer.Option(help="A load budget named in the study's [load].")] = "default",
         process_executions: ExecutionsOpt = None,
         duration: Annotated[float | None, typer.Option(help="Seconds recorded per load run.", min=0.001)] = None,
         warmup: Annotated[float | None, typer.Option(help="Seconds sent, not recorded, before.", min=0)] = None,
         mechanisms: Annotated[str | None, typer.Option(help="Comma-separated servers.")] = None,
         resume: Annotated[bool, typer.Option("--resume", help="Continue the latest unfinished load "
                                              "campaign.")] = False,
         campaign_id: Annotated[int | None, typer.Option("--campaign", help="With --resume: which one.")] = None,
         report_dir: Annotated[Path, typer.Option(help="Where the reports are written.")] = Path("results"),
         build_dir: BuildDirOpt = Path("build"),
         store_path: StoreOpt = DEFAULT_STORE,
         as_json: JsonOpt = False) -> None:
    """Load a study's servers: build, check each request's answer, a closed-loop saturation phase, then
    constant rates at fractions of it (and above it), every run a fresh server; analyse and report."""
    study = _load(study_name)
    _writable_folder(report_dir, "--report-dir")
    store = _store(store_path)
    _signals_stop_the_run()
    cid: int | None = None
    owner = None
    try:
        if resume:
            with store.planning():
                cid, options = load_campaign.resumable(store, study, campaign_id)
                owner = store.claim(cid)
            builds = _build(study, build_dir, list(options.mechanisms), quiet=as_json)
            camp.verify_builds(store, cid, builds)
        else:
            options = load_campaign.options_for(study, "quick" if quick else budget, _split(mechanisms),
                                                process_executions, duration, warmup)
            builds = _build(study, build_dir, list(options.mechanisms), quiet=as_json)
            if not any(b.available for b in builds.values()):
                fail(f"{study.name}: no server could be built; see the reasons above")
            with err.status("checking every server's answer to each request…") if not as_json else nullcontext():
                rows = load_campaign.check(study, builds, options.mechanisms)
            if any(r.status != "agrees" for r in rows):
                fail(_check_failure_message(rows), EXIT_CHECK_FAILED)
            if not as_json:
                err.print(f"[green]check passed[/]: every server gave each of {len(study.load.requests)} requests "
                          "the expected status")
            with store.planning():
                cid = load_campaign.start(store, study, options, builds, rows)
                owner = store.claim(cid)
        _with_progress(study, store, cid, as_json, lambda on_execution: load_campaign.run_pending(
            store, study, cid, options, builds, on_execution))
        result = load_analysis.analyse(store, cid)
    except (camp.CampaignError, StoreError, DriverError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    except KeyboardInterrupt:
        if cid is None:
            err.print("\ninterrupted before the campaign started: nothing was run or stored", highlight=False)
        else:
            err.print(f"\ninterrupted: {len(store.done_seqs(cid))} load runs of campaign {cid} are stored; "
                      f"continue with `bridgebench load {study_name} --resume`", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        if owner:
            owner.release()
    try:
        written = _write_load_reports(result, report_dir)
    except OSError as e:
        fail(f"--report-dir {report_dir}: cannot write the reports: {e.strerror} (the campaign is stored; "
             f"`bridgebench report {cid}` writes them again)")
    if as_json:
        _print_json(result.to_json())
    else:
        _load_report(result, out)
        err.print("reports: " + ", ".join(str(p) for p in written), highlight=False)
    if result.failed:
        fail(f"{result.failed} load run(s) failed (recorded; see Failures)", EXIT_FAILED_EXECUTIONS)


def _is_load(store: Store, campaign_id: int) -> bool:
    try:
        return load_campaign.is_load(store.campaign(campaign_id))
    except StoreError:
        return False


@app.command()
def enqueue(study_name: Annotated[str, typer.Argument(metavar="STUDY")],
            quick: QuickOpt = False, budget: BudgetOpt = "default", process_executions: ExecutionsOpt = None,
            iterations: IterationsOpt = None, timeout: TimeoutOpt = None, benchmarks: BenchmarksOpt = None,
            mechanisms: MechanismsOpt = None, random_order: RandomOrderOpt = False, seed: SeedOpt = 0,
            build_dir: BuildDirOpt = Path("build"),
            store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Build, check answers and plan a campaign here, and put its process executions on the store's queue
    for `bridgebench worker` on any machine (a PostgreSQL store)."""
    study = _load(study_name)
    store = _store(store_path)
    try:
        fleet.require_postgres(store)  # before building anything
        options = camp.options_for(study, "quick" if quick else budget, _split(benchmarks), _split(mechanisms),
                                   process_executions, iterations, timeout, random_order, seed)
        fleet.refuse_a_second(store, study, options)  # before building; enqueue checks again, under a lock
        builds, rows = _build_and_check(study, options, build_dir, as_json)
        cid = fleet.enqueue(store, study, options, builds, rows)
    except (camp.CampaignError, fleet.FleetError, StoreError) as e:
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
           build_dir: BuildDirOpt = Path("build")) -> None:
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
    terminal.status(st, out)


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
             store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """(Re)compute the analysis of a campaign from its stored iterations."""
    store = _store(store_path, create=False)
    try:
        cid = _campaign_arg(store, campaign_id, study)
        if _is_load(store, cid):
            loaded = load_analysis.analyse(store, cid)
            _print_json(loaded.to_json()) if as_json else _load_report(loaded, out)
            return
        result = analyse(store, cid, seed=seed, exclude_disturbed=exclude_disturbed)
        store.save_analysis(cid, result.to_json())
    except (StoreError, DriverError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    if as_json:
        _print_json(result.to_json())
    else:
        terminal.show(result, out)


@app.command()
def report(campaign_id: Annotated[int | None, typer.Argument(metavar="[CAMPAIGN]")] = None,
           study: Annotated[str | None, typer.Option(help="The latest campaign of this study.")] = None,
           format_: Annotated[str, typer.Option("--format", help=f"One of: {', '.join(REPORT_FORMATS)}.")]
           = "terminal",
           output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file.")] = None,
           exclude_disturbed: ExcludeOpt = False,
           store_path: StoreOpt = DEFAULT_STORE) -> None:
    """Show a campaign's results (analysing it first if needed)."""
    if format_ not in REPORT_FORMATS:
        fail(f"--format: expected one of {', '.join(REPORT_FORMATS)}, got {format_!r}")
    if output and not output.parent.is_dir():
        fail(f"-o {output}: no folder {output.parent}")
    store = _store(store_path, create=False)
    try:
        cid = _campaign_arg(store, campaign_id, study)
        if _is_load(store, cid):
            if format_ not in (TERMINAL, *load_report.FORMATS):
                fail(f"--format {format_}: a load campaign's report is one of: terminal, "
                     f"{', '.join(load_report.FORMATS)}")
            loaded = load_analysis.analyse(store, cid)
            _emit(output, format_, lambda console: _load_report(loaded, console),
                  lambda: load_report.FORMATS[format_](loaded))
            return
        result = current_analysis(store, cid, exclude_disturbed)
    except (StoreError, DriverError) as e:
        fail(str(e), EXIT_STORE_WRITE if isinstance(e, StoreWriteError) else EXIT_USAGE)
    _emit(output, format_, lambda console: terminal.show(result, console),
          lambda: render(format_, result, Series(store)))


def _side(spec: str) -> tuple[int, str | None]:
    campaign, _, mechanism = spec.partition(":")
    if not campaign.isdigit():
        fail(f"{spec!r}: expected CAMPAIGN or CAMPAIGN:MECHANISM, e.g. 3 or 3:luajit")
    return int(campaign), mechanism or None


@app.command()
def diff(a: Annotated[str, typer.Argument(metavar="A", help="CAMPAIGN or CAMPAIGN:MECHANISM")],
         b: Annotated[str, typer.Argument(metavar="B", help="CAMPAIGN or CAMPAIGN:MECHANISM")],
         cross_machine: Annotated[bool, typer.Option("--cross-machine",
                                                     help="Compare runs from different machines.")] = False,
         seed: Annotated[int | None, typer.Option(help="Bootstrap seed (default: campaign A's).")] = None,
         exclude_disturbed: ExcludeOpt = False,
         format_: Annotated[str, typer.Option("--format", help=f"One of: {', '.join(diff_report.FORMATS)}.")]
         = "terminal",
         output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file.")] = None,
         store_path: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Is the difference real? Compare two campaigns, or two mechanisms (3:luajit 3:luajit2)."""
    format_ = "json" if as_json else format_
    if format_ not in diff_report.FORMATS:
        fail(f"--format: expected one of {', '.join(diff_report.FORMATS)}, got {format_!r}")
    if output and not output.parent.is_dir():
        fail(f"-o {output}: no folder {output.parent}")
    (ca, ma), (cb, mb) = _side(a), _side(b)
    if (ma is None) != (mb is None):
        fail("name a mechanism on both sides (3:luajit 4:luajit2) or on neither (3 4)")
    store = _store(store_path, create=False)
    loads = [c for c in (ca, cb) if _is_load(store, c)]
    if loads:
        fail(f"campaign {loads[0]} is a load campaign: its report compares its servers "
             f"(`bridgebench report {loads[0]}`); diff compares campaigns timed in iterations")
    try:
        comparisons, header = compare(store, ca, ma, cb, mb, cross_machine=cross_machine, seed=seed,
                                      exclude_disturbed=exclude_disturbed)
    except (StoreError, DiffError) as e:
        fail(str(e))
    _emit(output, format_, lambda console: diff_report.show(comparisons, header, console),
          lambda: diff_report.render(format_, comparisons, header))


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
             as_json: JsonOpt = False) -> None:
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
                  else run_selftest(store, build_dir, repetitions, budget, on_finding, wait_quiet))
    except (camp.CampaignError, StoreError, DiffError) as e:
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
        table = terminal.selftest_table(title, tallies)
        out.print(table)
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
    out.print(terminal.doctor_table(findings))


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
