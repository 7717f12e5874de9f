"""A campaign: check that every mechanism computes the same answer, then run the planned process
executions, storing each one as it finishes. Resuming runs exactly the executions not stored yet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from bridgebench import adaptive, audit, environment
from bridgebench.answers import majority
from bridgebench.build import BuildResult, build_values, mechanism_env
from bridgebench.placeholders import expand_all
from bridgebench.runner import OK, PROTOCOL, Execution, Task, execute, plan
from bridgebench.store import AlreadyStored, Campaign, Store
from bridgebench.study import MAX_TIMEOUT_S, Budget, Study

CHECK_ITERATIONS = 2  # two, so the probe also sees that repeated calls give the same answer
# An adaptive setting given alone on the command line (`--until ci=2%`) takes the others from these.
DEFAULT_UNTIL_CI, DEFAULT_MAX_EXECUTIONS, DEFAULT_MAX_TIME_S = 0.02, 30, 3600.0
# A campaign's plan is stored up front, one row per process execution: bound it so a typo (-p 100000000)
# is a clear refusal, not minutes of planning and gigabytes of memory.
MAX_PLANNED_EXECUTIONS = 1_000_000
MAX_ITERATIONS = 10_000_000  # per process execution; the probe's stdout (64 MiB) could not hold more


class CampaignError(Exception):
    """A campaign that cannot start or resume; one line, ready to print."""


@dataclass(frozen=True)
class Options:
    budget: str
    process_executions: int
    iterations: int
    timeout_s: float
    benchmarks: tuple[str, ...]
    mechanisms: tuple[str, ...]
    randomise: bool = False
    seed: int = 0
    wait_quiet_s: float = 0.0  # before each execution, wait up to this long for a quiet machine (0: don't)
    until_ci: float | None = None  # adaptive: see study.Budget and adaptive.py (None: a fixed budget)
    max_process_executions: int | None = None
    max_time_s: float | None = None

    @property
    def adaptive(self) -> bool:
        return self.until_ci is not None


def options_for(study: Study, budget_name: str, benchmarks: list[str] | None, mechanisms: list[str] | None,
                process_executions: int | None = None, iterations: int | None = None,
                timeout_s: float | None = None, randomise: bool = False, seed: int = 0,
                wait_quiet_s: float = 0.0, until_ci: float | None = None, max_process_executions: int | None = None,
                max_time_s: float | None = None) -> Options:
    """The options of a campaign: the named budget, with what the command line gives taking precedence.
    An adaptive setting given alone takes the others from the budget, or the DEFAULT_* values."""
    if budget_name not in study.budgets:
        raise CampaignError(f"{study.path}: no budget '{budget_name}' (has: {', '.join(study.budgets)})")
    budget: Budget = study.budgets[budget_name]
    for kind, chosen, known in (("benchmark", benchmarks, study.benchmarks), ("mechanism", mechanisms,
                                                                               study.mechanisms)):
        unknown = [n for n in chosen or [] if n not in known]
        if unknown:
            raise CampaignError(f"{study.name}: no {kind} {', '.join(unknown)} (has: {', '.join(known)})")
    if not study.benchmarks:
        raise CampaignError(f"{study.name} has no benchmarks to time in iterations; its servers are measured "
                            f"with `bridgebench load {study.name}`")
    servers = [m for m in mechanisms or [] if study.mechanisms[m].is_server]
    if servers:
        raise CampaignError(f"{study.name}: {', '.join(servers)} is a server, measured under load with "
                            f"`bridgebench load {study.name}`, not in iterations")
    mechanisms = mechanisms or [m for m in study.mechanisms if not study.mechanisms[m].is_server]
    selected = list(mechanisms)
    idle = [b for b in benchmarks or [] if not study.cells([b], selected)]
    if idle:
        raise CampaignError(f"{study.name}: none of the mechanisms {', '.join(selected)} runs benchmark "
                            f"{', '.join(idle)} (see the benchmarks' `mechanisms` in {study.path.name})")
    # Without a choice of benchmarks, those that none of the chosen mechanisms runs are left out.
    benchmarks = benchmarks or [b for b in study.benchmarks if study.cells([b], selected)]
    options = Options(
        budget=budget_name,
        process_executions=process_executions or budget.process_executions,
        iterations=iterations or budget.iterations,
        timeout_s=timeout_s or budget.timeout_s,
        benchmarks=tuple(benchmarks or study.benchmarks),
        mechanisms=tuple(mechanisms or study.mechanisms),
        randomise=randomise,
        seed=seed,
        wait_quiet_s=wait_quiet_s,
    )
    given = (until_ci, max_process_executions, max_time_s)
    if budget.until_ci is not None or any(v is not None for v in given):
        pexecs = options.process_executions
        options = replace(
            options,
            until_ci=until_ci or budget.until_ci or DEFAULT_UNTIL_CI,
            max_process_executions=max_process_executions or budget.max_process_executions
            or max(pexecs, DEFAULT_MAX_EXECUTIONS),
            max_time_s=max_time_s or budget.max_time_s or DEFAULT_MAX_TIME_S)
        if not 0 < options.until_ci < 1:  # type: ignore[operator]
            raise CampaignError(f"--until ci={options.until_ci}: expected a share above 0 and below 1 (2% or 0.02)")
        if options.max_process_executions < pexecs:  # type: ignore[operator]
            raise CampaignError(f"--max-executions {options.max_process_executions}: expected at least the "
                                f"{pexecs} process executions every cell gets first")
        if not 0 < options.max_time_s <= MAX_TIMEOUT_S * 7:  # type: ignore[operator]
            raise CampaignError(f"--max-time {options.max_time_s:g} s: expected above 0 and at most a week")
    if not 0 <= wait_quiet_s <= MAX_TIMEOUT_S:
        raise CampaignError(f"--wait-quiet {wait_quiet_s:g} s: expected 0 to {MAX_TIMEOUT_S:g} s")
    per_cell = options.max_process_executions or options.process_executions
    planned = per_cell * len(options.benchmarks) * len(options.mechanisms)
    if planned > MAX_PLANNED_EXECUTIONS:
        raise CampaignError(f"{study.name}: {per_cell} process executions × "
                            f"{len(options.benchmarks)} benchmarks × {len(options.mechanisms)} mechanisms is "
                            f"{planned} executions; at most {MAX_PLANNED_EXECUTIONS} are planned in one campaign")
    if options.iterations > MAX_ITERATIONS:
        raise CampaignError(f"{study.name}: {options.iterations} iterations per process execution; at most "
                            f"{MAX_ITERATIONS}")
    if not 0 < options.timeout_s <= MAX_TIMEOUT_S:
        raise CampaignError(f"timeout {options.timeout_s:g} s: expected above 0 and at most {MAX_TIMEOUT_S:g} s")
    return options


AUTO_BATCH = "auto"  # what {batch} is in the answer check: the probe calibrates, the timed runs reuse it


def command_for(study: Study, build: BuildResult, benchmark: str, param: str, iterations: int,
                batch: int | None = None) -> tuple[list[str], dict[str, str]]:
    mech = study.mechanisms[build.mechanism]
    bench = study.benchmarks[benchmark]
    values = build_values(study, build.build_dir) | {
        "benchmark": benchmark,
        "benchmark_file": str(study.dir / bench.file),
        "param": param,
        "iterations": str(iterations),
        "batch": str(batch) if batch else AUTO_BATCH,
    }
    return expand_all(mech.run, values), mechanism_env(mech, values)


# --- the answer check --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckRow:
    benchmark: str
    mechanism: str
    status: str  # "agrees", "disagrees", "failed"
    answer: str | None
    detail: str
    batch: int | None = None  # calls per iteration the probe chose; timed runs reuse it


def check(study: Study, builds: dict[str, BuildResult], benchmarks: tuple[str, ...], timeout_s: float,
          on_row: Callable[[CheckRow], None] | None = None) -> list[CheckRow]:
    """Run every available mechanism once on each benchmark's check input and compare the answers
    with the study's expected answer, or else with the answer most mechanisms gave."""
    rows: list[CheckRow] = []
    available = [b for b in builds.values() if b.available]
    for benchmark in benchmarks:
        bench = study.benchmarks[benchmark]
        runs: dict[str, Execution] = {}
        for build in available:
            if not study.runs(benchmark, build.mechanism):
                continue
            argv, env = command_for(study, build, benchmark, bench.check_param, CHECK_ITERATIONS)
            runs[build.mechanism] = execute(argv, env, study.dir, CHECK_ITERATIONS, timeout_s)
        reference = bench.expect
        if reference is None:
            reference = majority(r.output.answer for r in runs.values() if r.status == OK and r.output)
        for mechanism, run in runs.items():
            if run.status != OK or run.output is None:
                row = CheckRow(benchmark, mechanism, "failed", None, f"{run.status}: {run.detail}")
            elif reference is None:
                row = CheckRow(benchmark, mechanism, "disagrees", run.output.answer, "no answer has a majority",
                               run.output.batch)
            elif run.output.answer != reference:
                row = CheckRow(benchmark, mechanism, "disagrees", run.output.answer, f"expected {reference!r}",
                               run.output.batch)
            else:
                row = CheckRow(benchmark, mechanism, "agrees", run.output.answer, "", run.output.batch)
            rows.append(row)
            if on_row:
                on_row(row)
    return rows


# --- running -----------------------------------------------------------------------------------------
def start(store: Store, study: Study, options: Options, builds: dict[str, BuildResult],
          checked: list[CheckRow]) -> int:
    available = [m for m in options.mechanisms if builds[m].available]
    tasks = plan(study.cells(options.benchmarks, available), options.process_executions, options.randomise,
                 options.seed)
    return create(store, study, {"study": study.raw, "options": asdict(options)}, tasks, builds, checked)


def create(store: Store, study: Study, config: dict[str, Any], tasks: list[Task], builds: dict[str, BuildResult],
           checked: list[CheckRow]) -> int:
    """A new campaign in the store: its plan, the machine, the builds and the answer check (one place for
    iteration and load campaigns alike)."""
    env = environment.capture()
    campaign_id = store.create_campaign(study.name, str(study.path), study.config_hash(), config,
                                        environment.git_sha(), env, environment.machine_id(env), tasks)
    store.record_builds(campaign_id, builds, {m: study.mechanisms[m].label for m in builds})
    store.record_check(campaign_id, [(r.benchmark, r.mechanism, r.status, r.answer, r.detail, r.batch)
                                     for r in checked])
    return campaign_id


def resumable(store: Store, study: Study, campaign_id: int | None) -> tuple[int, Options]:
    campaign = store.campaign(campaign_id) if campaign_id else store.latest_campaign(study.name, unfinished=True)
    if campaign is None:
        raise CampaignError(f"{study.name}: no unfinished campaign to resume in {store.path}")
    if campaign.study != study.name:
        raise CampaignError(f"campaign {campaign.id} is of study {campaign.study}, not {study.name}")
    if campaign.config.get("kind") == "load":
        raise CampaignError(f"campaign {campaign.id} is a load campaign: `bridgebench load {study.name} --resume`")
    if campaign.state == "done":
        raise CampaignError(f"campaign {campaign.id} is already complete")
    if campaign.config_hash != study.config_hash():
        raise CampaignError(f"{study.path} has changed since campaign {campaign.id} started; "
                            "start a new campaign (a resumed one must measure the same thing)")
    return campaign.id, stored_options(campaign)


def stored_options(campaign: Campaign) -> Options:
    """The options a campaign was started with, as it stored them."""
    opts = campaign.config["options"]
    return Options(**{**opts, "benchmarks": tuple(opts["benchmarks"]), "mechanisms": tuple(opts["mechanisms"])})


def verify_builds(store: Store, campaign_id: int, builds: dict[str, BuildResult]) -> None:
    for stored in store.builds(campaign_id):
        now = builds.get(stored["mechanism"])
        if stored["available"] and (now is None or not now.available or now.build_hash != stored["build_hash"]):
            raise CampaignError(f"mechanism {stored['mechanism']} is not built as it was when campaign "
                                f"{campaign_id} started; start a new campaign")


def run_tasks(store: Store, study: Study, campaign_id: int, options: Options, builds: dict[str, BuildResult],
              tasks: list[Task], on_execution: Callable[[Task, Execution], None] | None = None,
              skip: Callable[[Task], bool] | None = None, machine: str | None = None) -> list[Task]:
    """Run tasks in order, committing each execution as soon as it ends; returns the tasks `skip` left out.
    `machine`: the machine running them, when it is not the campaign's own (a fleet worker). A task that
    another harness stored meanwhile is not stored twice (the store refuses it; it is dropped)."""
    batches = {(r["benchmark"], r["mechanism"]): r["batch"] for r in store.check_answers(campaign_id)}
    skipped = []
    for task in tasks:
        if skip and skip(task):
            skipped.append(task)
            continue
        bench = study.benchmarks[task.benchmark]
        argv, env = command_for(study, builds[task.mechanism], task.benchmark, bench.param,
                                options.iterations, batches.get((task.benchmark, task.mechanism)))
        waited = audit.wait_quiet(options.wait_quiet_s) if options.wait_quiet_s > 0 else 0.0
        run = execute(argv, env, study.dir, options.iterations, options.timeout_s)
        if waited and run.machine:
            run = replace(run, machine=replace(run.machine, waited_s=waited))
        try:
            store.record_execution(campaign_id, task, run, machine)
        except AlreadyStored:
            continue
        except (OverflowError, ValueError) as e:  # a value the protocol's checks let through: that
            run = replace(run, status=PROTOCOL, detail=f"output cannot be stored: {e}"[:300], output=None)
            store.record_execution(campaign_id, task, run, machine)  # execution fails, the campaign goes on
        if on_execution:
            on_execution(task, run)
    return skipped


def run_pending(store: Store, study: Study, campaign_id: int, options: Options, builds: dict[str, BuildResult],
                on_execution: Callable[[Task, Execution], None] | None = None) -> None:
    """Run what is left of the plan (with an adaptive budget, round after round until the cells settle).
    On Ctrl-C the execution in flight is killed and discarded, the campaign is marked interrupted, and the
    interrupt goes on up."""
    store.set_state(campaign_id, "running")
    try:
        if options.adaptive:
            cells = list(dict.fromkeys((t.benchmark, t.mechanism) for t in store.planned(campaign_id)))
            adaptive.run(store, campaign_id, cells, options.process_executions, options.until_ci or 0.0,
                         options.max_process_executions or options.process_executions, options.max_time_s or 0.0,
                         lambda tasks, skip: run_tasks(store, study, campaign_id, options, builds, tasks,
                                                       on_execution, skip),
                         options.randomise, options.seed)
        else:
            run_tasks(store, study, campaign_id, options, builds, store.pending(campaign_id), on_execution)
    except BaseException:
        store.set_state(campaign_id, "interrupted")
        raise
    store.set_state(campaign_id, "done")
