"""The `bridgebench` command: parse, call, print. No measuring or statistics happen here; a campaign's life is
campaign/lifecycle.py, the drawing is cli_views.py, the shared options are cli_options.py."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from bridgebench import __version__, baseline, environment, fleet, gate, reference, shared_cache
from bridgebench import calibrate as calibration
from bridgebench import cli_options as opt
from bridgebench import cli_views as views
from bridgebench.campaign import kinds, lifecycle, loadtest, timing
from bridgebench.campaign.kind import CampaignError, Kind
from bridgebench.campaign.kinds import LOAD, TIMING
from bridgebench.loadtest.driver import DriverError
from bridgebench.options import SEQUENTIAL, Options, listed
from bridgebench.report import TERMINAL
from bridgebench.selftest import FAIL as SELFTEST_FAIL
from bridgebench.selftest import Finding, rejudge, run_selftest
from bridgebench.store import Store, StoreError, StoreMissing, StoreWriteError
from bridgebench.study import Study, StudyError, find_study, read_study
from bridgebench.study import listed as listed_studies
from bridgebench.timing.diff_sides import DiffError, compare
from bridgebench.timing.lockstep import CpuError, lock_cpu
from bridgebench.timing.report import diff as diff_report

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

# The one mapping of errors to exit codes, first match wins; every error here is one line, ready to print.
EXITS: tuple[tuple[type[Exception], int], ...] = (
    (StoreWriteError, EXIT_STORE_WRITE),
    (lifecycle.CheckFailed, EXIT_CHECK_FAILED),
    (calibration.CalibrationError, EXIT_FAILED_EXECUTIONS),
    *((e, EXIT_USAGE) for e in (CampaignError, StudyError, StoreError, DriverError, DiffError, opt.OptionError,
                                fleet.FleetError, baseline.BaselineError, gate.GateError,
                                CpuError)),
)

# Help is plain text: rich markup would eat the TOML tables help and errors name ([load], [budget]).
app = typer.Typer(help="Measure what it costs to run user code through each mechanism, and whether the "
                  "difference is real.", no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None)
out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def command(name: str | None = None, *, interrupted: str | None = None) -> Callable[[Callable[..., None]], Any]:
    """A command whose errors (EXITS) end it with one line and their exit code; an interrupt ends it with
    exit 130 and `interrupted` if the command has its own words for it, else what lifecycle.Interrupted
    says (a bare KeyboardInterrupt says nothing)."""
    def register(f: Callable[..., None]) -> Any:
        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> None:
            try:
                f(*args, **kwargs)
            except (lifecycle.Interrupted, KeyboardInterrupt) as e:
                said = f"interrupted: {interrupted}" if interrupted else str(e)
                if said:  # not through `err`: an interrupt inside one of its prints can leave it buffering for
                    # good, and the line that says how to resume would be lost (seen once in CI, 2026-11-30)
                    sys.stderr.write(f"\n{said}\n")
                    sys.stderr.flush()
                raise typer.Exit(EXIT_INTERRUPTED) from None
            except tuple(e for e, _ in EXITS) as e:
                fail(str(e), next(code for kind, code in EXITS if isinstance(e, kind)))
        return app.command(name)(run)
    return register


def _print_version(asked: bool) -> None:
    if asked:
        out.print(f"bridgebench {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                   help="Print bridgebench's version and exit.")] = False) -> None:
    """Measure what it costs to run user code through each mechanism, and whether the difference is real."""


def _study(name: str) -> Study:
    return read_study(find_study(name))


def _store(location: str, create: bool = True) -> Store:
    """Open the store; read-only commands pass create=False so a mistyped path is an error, not a new
    empty store. Whatever stops it opening is the user's to fix (exit 2), a read-only disk included."""
    try:
        return Store(location, create=create)
    except StoreMissing:
        raise
    except StoreError as e:
        fail(str(e))


def _listener(quiet: bool) -> lifecycle.Listener:
    return lifecycle.QUIET if quiet else views.Drawn(err)


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


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


@command("list")
def list_(store_path: opt.StoreOpt = opt.DEFAULT_STORE, as_json: opt.JsonOpt = False) -> None:
    """List the studies, and the campaigns in the store."""
    store = None
    with contextlib.suppress(StoreMissing):  # no store yet: only the studies
        store = _store(store_path, create=False)
    studies, campaigns = listed_studies(), [listed(c) for c in store.campaigns()] if store else []
    if as_json:
        _print_json({"studies": studies, "campaigns": campaigns})
        return
    for table in views.list_tables(studies, campaigns, store.path if store else store_path):
        out.print(table)


@command()
def build(study_name: opt.StudyArg, mechanisms: opt.MechanismsOpt = None, build_dir: opt.StudyBuildDirOpt = None,
          as_json: opt.JsonOpt = False) -> None:
    """Build a study's mechanisms (cached); say which are unavailable and why."""
    builds = lifecycle.build(_study(study_name), build_dir, opt.split(mechanisms), _listener(as_json))
    if as_json:
        _print_json([{"mechanism": b.mechanism, "available": b.available, "reason": b.reason,
                      "version": b.version, "cached": b.cached} for b in builds.values()])


@command()
def check(study_name: opt.StudyArg, benchmarks: opt.BenchmarksOpt = None, mechanisms: opt.MechanismsOpt = None,
          build_dir: opt.StudyBuildDirOpt = None, as_json: opt.JsonOpt = False) -> None:
    """Build, then check that every mechanism computes the same answer (exit 3 if not): each probe on every
    benchmark, and each server's answer to every request, as `load` checks it first."""
    study, listener = _study(study_name), _listener(as_json)
    parts = lifecycle.check_parts(study, opt.split(benchmarks), opt.split(mechanisms))
    builds = lifecycle.build(study, build_dir, list(dict.fromkeys(m for _, o in parts for m in o.mechanisms)),
                             listener)
    rows = [row for kind, opts in parts for row in lifecycle.check(kind, study, builds, opts, listener)]
    if as_json:
        _print_json([r.__dict__ for r in rows])
    failure = lifecycle.failure(rows)
    if failure:
        fail(failure, EXIT_CHECK_FAILED)


def _campaign(kind: Kind, study_name: str, new_options: Callable[[Study], Options], resume: bool,
              campaign_id: int | None, report_dir: Path, build_dir: Path | None, store_path: str, as_json: bool,
              seed: int | None = None, exclude_disturbed: bool = False, wide: bool = False,
              more_time_s: float | None = None) -> None:
    """`run` and `load`: start a campaign of this kind or resume one (`more_time_s`: with its time cap raised to
    that), then write its reports and print it."""
    study = _study(study_name)
    opt.writable_folder(report_dir, "--report-dir")
    chosen = None if resume else new_options(study)  # refused before a store is opened (or created)
    store, listener = _store(store_path), _listener(as_json)
    lifecycle.signals_interrupt()
    if chosen is None:
        cid = lifecycle.resume(kind, study, store, campaign_id, build_dir, listener, more_time_s)
    else:
        cid = lifecycle.start(kind, study, store, chosen, build_dir, listener)
    result = kind.analyse(store, cid, seed=seed, exclude_disturbed=exclude_disturbed)
    written = lifecycle.write_reports(kind, result, store, study, cid, report_dir)
    if as_json:
        _print_json(result.to_json())
    else:
        kind.show(result, out, wide)
        err.print("reports: " + ", ".join(str(p) for p in written), highlight=False)
    failed = kind.failed(result)
    if failed:
        fail(failed, EXIT_FAILED_EXECUTIONS)


@command()
def run(study_name: opt.StudyArg, quick: opt.QuickOpt = False, budget: opt.BudgetOpt = "default",
        process_executions: opt.ExecutionsOpt = None, iterations: opt.IterationsOpt = None,
        timeout: opt.TimeoutOpt = None, benchmarks: opt.BenchmarksOpt = None, mechanisms: opt.MechanismsOpt = None,
        random_order: opt.RandomOrderOpt = False, seed: opt.SeedOpt = 0, wait_quiet: opt.WaitQuietOpt = 0.0,
        exclude_disturbed: opt.ExcludeOpt = False, until_: opt.RunUntilOpt = None, max_time: opt.MaxTimeOpt = None,
        max_executions: opt.RunMaxExecutionsOpt = None, metric: opt.MetricOpt = None, pairing: opt.PairingOpt = None,
        layout: opt.LayoutOpt = None, turns: opt.TurnsOpt = None, resume: opt.RunResumeOpt = False,
        campaign_id: opt.ResumeCampaignOpt = None, report_dir: opt.ReportDirOpt = Path("results"),
        build_dir: opt.StudyBuildDirOpt = None,
        store_path: opt.StoreOpt = opt.DEFAULT_STORE, as_json: opt.JsonOpt = False, wide: opt.WideOpt = False) -> None:
    """Build, check answers, run the campaign (or resume it), analyse, and report."""
    lock_cpu()  # a BRIDGEBENCH_BLOCK_CPU that names no CPU here stops the run before anything is built

    def options(study: Study) -> Options:
        return timing.options_for(study, "quick" if quick else budget, opt.split(benchmarks), opt.split(mechanisms),
                                  process_executions, iterations, timeout, random_order, seed, wait_quiet,
                                  *opt.adaptive(until_, max_executions, max_time), metric=metric, pairing=pairing,
                                  layout_=layout, turns=turns)

    _campaign(TIMING, study_name, options, resume, campaign_id, report_dir, build_dir, store_path, as_json, seed,
              exclude_disturbed, wide, opt.seconds(max_time, "--max-time") if resume else None)


@command()
def load(study_name: opt.StudyArg, quick: opt.QuickOpt = False, budget: opt.LoadBudgetOpt = "default",
         process_executions: opt.ExecutionsOpt = None, duration: opt.LoadDurationOpt = None,
         warmup: opt.LoadWarmupOpt = None, mechanisms: opt.LoadMechanismsOpt = None, until_: opt.LoadUntilOpt = None,
         max_time: opt.LoadMaxTimeOpt = None, max_executions: opt.LoadMaxExecutionsOpt = None,
         resume: opt.LoadResumeOpt = False, campaign_id: opt.ResumeCampaignOpt = None,
         report_dir: opt.ReportDirOpt = Path("results"), build_dir: opt.StudyBuildDirOpt = None,
         store_path: opt.StoreOpt = opt.DEFAULT_STORE, as_json: opt.JsonOpt = False) -> None:
    """Load a study's servers: build, check each request's answer, a closed-loop saturation phase, then
    constant rates at fractions of it (and above it), every run a fresh server; analyse and report."""
    until_ci, until_decided = opt.until(until_)
    if until_decided:
        fail("--until decided: a load campaign settles its cells by their intervals; give --until ci=SHARE")

    def options(study: Study) -> Options:
        return loadtest.options_for(study, "quick" if quick else budget, opt.split(mechanisms),
                                         process_executions, duration, warmup, until_ci, max_executions,
                                         opt.seconds(max_time, "--max-time"))

    _campaign(LOAD, study_name, options, resume, campaign_id, report_dir, build_dir, store_path, as_json)


@command()
def enqueue(study_name: opt.StudyArg, quick: opt.QuickOpt = False, budget: opt.BudgetOpt = "default",
            process_executions: opt.ExecutionsOpt = None, iterations: opt.IterationsOpt = None,
            timeout: opt.TimeoutOpt = None, benchmarks: opt.BenchmarksOpt = None, mechanisms: opt.MechanismsOpt = None,
            random_order: opt.RandomOrderOpt = False, seed: opt.SeedOpt = 0, metric: opt.MetricOpt = None,
            build_dir: opt.StudyBuildDirOpt = None, store_path: opt.StoreOpt = opt.DEFAULT_STORE,
            as_json: opt.JsonOpt = False) -> None:
    """Build, check answers and plan a campaign here, and put its process executions on the store's queue
    for `bridgebench worker` on any machine (a PostgreSQL store)."""
    study = _study(study_name)
    store = _store(store_path)
    fleet.require_postgres(store)  # before building anything
    options = timing.options_for(study, "quick" if quick else budget, opt.split(benchmarks), opt.split(mechanisms),
                                 process_executions, iterations, timeout, random_order, seed, metric=metric,
                                 pairing=SEQUENTIAL)  # a fleet's workers each run single executions
    fleet.refuse_a_second(store, study, options)  # before building; enqueue checks again, under a lock
    prepared = lifecycle.prepare(TIMING, study, options, build_dir, _listener(as_json))
    cid = fleet.enqueue(store, study, options, prepared.builds, prepared.rows)
    planned = len(store.planned(cid))
    if as_json:
        _print_json({"campaign": cid, "planned": planned})
    else:
        out.print(f"campaign {cid} of {study.name}: {planned} process executions queued in {escape(store.path)}; "
                  f"run `bridgebench worker` on each machine, `bridgebench status {cid}` to follow", highlight=False)


@command()
def worker(store_path: opt.StoreOpt = opt.DEFAULT_STORE, concurrency: opt.WorkerConcurrencyOpt = 1,
           until_done: opt.WorkerUntilDoneOpt = False, campaign_id: opt.WorkerCampaignIdOpt = None,
           build_dir: opt.StudyBuildDirOpt = None) -> None:
    """Run queued process executions, one at a time, storing each as it ends (SIGINT/SIGTERM: stop after
    the one in hand)."""
    store = _store(store_path, create=False)
    fleet.run_worker(store, build_dir, concurrency=concurrency, until_done=until_done, campaign_id=campaign_id)


@command()
def status(campaign_id: opt.CampaignArg = None, store_path: opt.StoreOpt = opt.DEFAULT_STORE,
           as_json: opt.JsonOpt = False) -> None:
    """Where a campaign stands: planned, queued, running, stored and failed, per machine, with an ETA."""
    store = _store(store_path, create=False)
    st = fleet.status(store, campaign_id if campaign_id is not None else fleet.latest_campaign(store))
    if as_json:
        _print_json(asdict(st))
        return
    views.status(st, out)


@command("analyse")
def analyse_(campaign_id: opt.CampaignArg = None, study: opt.LatestOfOpt = None, seed: opt.AnalyseSeedOpt = None,
             exclude_disturbed: opt.ExcludeOpt = False, store_path: opt.StoreOpt = opt.DEFAULT_STORE,
             as_json: opt.JsonOpt = False, wide: opt.WideOpt = False) -> None:
    """(Re)compute the analysis of a campaign from its stored iterations."""
    store = _store(store_path, create=False)
    cid = lifecycle.chosen(store, campaign_id, study)
    kind = kinds.stored(store, cid)
    result = kind.analyse(store, cid, seed=seed, exclude_disturbed=exclude_disturbed)
    if as_json:
        _print_json(result.to_json())
    else:
        kind.show(result, out, wide)


@command()
def report(campaign_id: opt.CampaignArg = None, study: opt.LatestOfOpt = None,
           format_: opt.ReportFormatOpt = "terminal", output: opt.OutputOpt = None,
           exclude_disturbed: opt.ExcludeOpt = False, store_path: opt.StoreOpt = opt.DEFAULT_STORE,
           wide: opt.WideOpt = False) -> None:
    """Show a campaign's results (analysing it first if needed)."""
    if format_ not in opt.REPORT_FORMATS:
        fail(f"--format: expected one of {', '.join(opt.REPORT_FORMATS)}, got {format_!r}")
    opt.output_folder(output)
    store = _store(store_path, create=False)
    cid = lifecycle.chosen(store, campaign_id, study)
    kind = kinds.stored(store, cid)
    if format_ not in (TERMINAL, *kind.formats):
        fail(f"--format {format_}: a {kind.noun}'s report is one of: terminal, {', '.join(kind.formats)}")
    result = kind.current(store, cid, exclude_disturbed)
    _emit(output, format_, lambda console: kind.show(result, console, wide),
          lambda: kind.formats[format_](result, store))


@command("export")
def export_(campaign_id: opt.ExportCampaignIdArg, output: opt.ExportOutputOpt,
            store_path: opt.StoreOpt = opt.DEFAULT_STORE) -> None:
    """Write a campaign to a portable baseline file, for `diff FILE CAMPAIGN` on another store (a CI job)."""
    written = baseline.export(_store(store_path, create=False), campaign_id, output)
    out.print(f"{written}: campaign {campaign_id}, a baseline for `bridgebench diff {written} CAMPAIGN`",
              highlight=False, soft_wrap=True)


@command()
def diff(a: opt.DiffAArg, b: opt.DiffBArg, cross_machine: opt.DiffCrossMachineOpt = False,
         exclude_disturbed: opt.ExcludeOpt = False, format_: opt.DiffFormatOpt = "terminal",
         output: opt.OutputOpt = None, fail_on: opt.DiffFailOnOpt = None, margin: opt.DiffMarginOpt = None,
         store_path: opt.StoreOpt = opt.DEFAULT_STORE, as_json: opt.JsonOpt = False) -> None:
    """Is the difference real? Compare two campaigns, or two mechanisms (3:luajit 3:luajit2), or a baseline
    file exported elsewhere with a campaign (base.bbx 4)."""
    gate_on = gate.verdicts(fail_on) if fail_on else ()
    within = gate.share(margin) if margin is not None else None
    format_ = "json" if as_json else format_
    if format_ not in diff_report.FORMATS:
        fail(f"--format: expected one of {', '.join(diff_report.FORMATS)}, got {format_!r}")
    opt.output_folder(output)
    (store, ca, ma, name_a), (store_b, cb, mb, name_b) = baseline.open_sides((a, b), store_path)
    if (ma is None) != (mb is None):
        fail("name a mechanism on both sides (3:luajit 4:luajit2) or on neither (3 4)")
    comparisons, header = compare(store, ca, ma, cb, mb, cross_machine=cross_machine,
                                  exclude_disturbed=exclude_disturbed, margin=within, store_b=store_b,
                                  names=(name_a, name_b))
    _emit(output, format_, lambda console: diff_report.show(comparisons, header, console),
          lambda: diff_report.render(format_, comparisons, header))
    failed = gate.failing(comparisons, gate_on)
    if failed:
        err.print(escape(failed), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_GATE)


@command(interrupted="the self-test gives no verdict")
def selftest(repetitions: opt.SelftestRepetitionsOpt = 1, budget: opt.SelftestBudgetOpt = "default",
             build_dir: opt.BuildDirOpt = Path("build"), wait_quiet: opt.WaitQuietOpt = 0.0,
             again: opt.SelftestAgainOpt = False, store_path: opt.SelftestStorePathOpt = "results/selftest.sqlite",
             pairing: opt.PairingOpt = None, as_json: opt.JsonOpt = False) -> None:
    """Check bridgebench's verdicts on planted changes (A vs A, +5% work, warm-up, slowdown, no steady state);
    exit 5 if they are wrong on a quiet machine."""
    lock_cpu()  # as `run`: a BRIDGEBENCH_BLOCK_CPU that names no CPU here stops it before anything is built
    store = _store(store_path)
    lifecycle.signals_interrupt()

    def on_finding(f: Finding) -> None:
        if not as_json and not f.ok:
            err.print(views.wrong_finding(f), highlight=False, soft_wrap=True)

    report = (rejudge(store, on_finding) if again
              else run_selftest(store, build_dir, repetitions, budget, on_finding, wait_quiet, pairing))
    if as_json:
        _print_json(views.selftest_json(report))
    else:
        judged = len({f.campaign for f in report.findings})
        views.selftest(f"Self-test, {judged} stored repetition(s) judged again" if again
                       else f"Self-test over {repetitions} repetition(s), budget '{budget}'", report, out)
    if report.verdict == SELFTEST_FAIL:
        raise typer.Exit(EXIT_SELFTEST_WRONG)


@command()
def doctor(store_location: opt.StoreOpt = opt.DEFAULT_STORE, as_json: opt.JsonOpt = False) -> None:
    """Say what makes this machine noisy for benchmarking, and how to fix it where one can, how fast it runs
    now against its calibration in the store (a tenth of a second of a constant loop), and how much of the cache
    its cores share with other tenants it has now (under a second of pointer chasing). Never fails."""
    env = environment.capture()
    findings = environment.doctor(env)
    findings.append(reference.advice(reference.read("doctor", lock_cpu()),
                                     _calibration_or_none(store_location, environment.machine_id(env)), env))
    findings.append(shared_cache.advice(shared_cache.read(lock_cpu())))
    if as_json:
        _print_json({"environment": env, "findings": [f.__dict__ for f in findings]})
        return
    out.print(views.doctor_table(findings))


def _calibration_or_none(store_location: str, machine: str) -> dict[str, Any] | None:
    """The machine's latest calibration in the store, or None (no store, or one that cannot be read)."""
    try:
        with contextlib.closing(Store(store_location, create=False)) as store:
            return store.calibration(machine)
    except StoreError:
        return None


@command(interrupted="nothing was stored")
def calibrate(store_location: opt.StoreOpt = opt.DEFAULT_STORE, build_dir: opt.BuildDirOpt = Path("build"),
              executions: opt.CalibrateExecutionsOpt = calibration.EXECUTIONS,
              iterations: opt.CalibrateIterationsOpt = None, as_json: opt.JsonOpt = False) -> None:
    """Measure how far this machine moves a constant program's speed by itself, at several execution lengths,
    and store the δ that follows at each with the machine: campaigns created on it afterwards classify each
    of their executions with the δ of the length nearest its own (methodology §3)."""
    store = _store(store_location)

    lifecycle.signals_interrupt()
    result = calibration.calibrate(build_dir, executions, tuple(dict.fromkeys(iterations or calibration.LENGTHS)),
                                   None if as_json else views.calibration_progress(err, executions))
    store.record_calibration(result.machine, result.created, result.to_json())
    if as_json:
        _print_json(result.to_json())
        return
    for line in views.calibration_lines(result):
        out.print(line, highlight=False, soft_wrap=True)


def main() -> None:
    sys.argv = opt.optional_values(sys.argv)
    app()


if __name__ == "__main__":
    main()
