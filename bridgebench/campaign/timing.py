"""The timing kind of campaign: each process execution runs a benchmark's probe for I iterations of wall
time. Its options, its answer check (every mechanism's probe on the check input, the answers compared), its
plan (rounds of every benchmark × mechanism, interleaved), one execution, and its analysis and reports."""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from bridgebench import audit, instructions
from bridgebench.build import BuildResult, build_values, mechanism_env
from bridgebench.campaign import replace as replace_dropped
from bridgebench.campaign.kind import CampaignError, CheckRow, Execute, Renderer
from bridgebench.majority import majority
from bridgebench.options import (
    DRAWN,
    FIXED,
    LAYOUTS,
    LOCKSTEP,
    PAIRINGS,
    SEQUENTIAL,
    SHARED,
    TIMING,
    TimingOptions,
)
from bridgebench.placeholders import expand, expand_all
from bridgebench.runner import ABANDONED, OK, Execution, Task, execute, execute_counted, plan
from bridgebench.stats import too_short_for_changepoints
from bridgebench.store import Store
from bridgebench.study import INTERLEAVED, MAX_TIMEOUT_S, SEPARATE, TOGETHER, TURNS, TWINS, Budget, Study
from bridgebench.timing import layout, lockstep, together
from bridgebench.timing.analysis import (
    WRONG_ANSWER,
    Series,
    analyse,
    current_analysis,
    first_iteration_seconds,
    first_warmup,
)
from bridgebench.timing.report import FORMATS, WRITTEN_AFTER_A_RUN, render, terminal
from bridgebench.timing.result import Analysis

CHECK_ITERATIONS = 2  # two, so the probe also sees that repeated calls give the same answer
# An adaptive setting given alone on the command line (`--until ci=2%`) takes the others from these.
DEFAULT_UNTIL_CI, DEFAULT_MAX_EXECUTIONS, DEFAULT_MAX_TIME_S = 0.02, 30, 3600.0
DEFAULT_MIN_ITERATIONS = 5  # sized iterations: below this an execution's mean rests on too little
LATER_MIN_ITERATIONS = 3  # a shortened execution (later_share) still has a mean over a few iterations
UNCLASSIFIED_MIN_STEADY = 2  # an execution with fewer steady iterations gives the ratio nothing (steady_rounds)
SIZING_ITERATIONS = 2  # the run that sizes a cell's iterations: the faster of two (the first may warm up)
# A campaign's plan is stored up front, one row per process execution: bound it so a typo (-p 100000000)
# is a clear refusal, not minutes of planning and gigabytes of memory.
MAX_PLANNED_EXECUTIONS = 1_000_000
MAX_ITERATIONS = 10_000_000  # per process execution; the probe's stdout (64 MiB) could not hold more


def options_for(study: Study, budget_name: str, benchmarks: list[str] | None, mechanisms: list[str] | None,
                process_executions: int | None = None, iterations: int | None = None,
                timeout_s: float | None = None, randomise: bool = False, seed: int = 0,
                wait_quiet_s: float = 0.0, until_ci: float | None = None, max_process_executions: int | None = None,
                max_time_s: float | None = None, until_decided: bool | None = None,
                metric: str | None = None, pairing: str | None = None, layout_: str | None = None,
                turns: str | None = None) -> TimingOptions:
    """The options of a campaign: the named budget, with what the command line gives taking precedence.
    An adaptive setting given alone takes the others from the budget, or the DEFAULT_* values. Timed, the
    mechanisms of a study with a baseline (a ratio question) run in lock-step blocks and every execution
    draws its memory layout, unless told otherwise."""
    if not study.budgets:
        raise CampaignError(f"{study.name} has no benchmarks timed in iterations, only servers: use "
                            f"`bridgebench load {study.name}`")
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
    mechanisms = mechanisms or list(budget.mechanisms or
                                    [m for m in study.mechanisms if not study.mechanisms[m].is_server])
    selected = list(mechanisms)
    idle = [b for b in benchmarks or [] if not study.cells([b], selected)]
    if idle:
        raise CampaignError(f"{study.name}: none of the mechanisms {', '.join(selected)} runs benchmark "
                            f"{', '.join(idle)} (see the benchmarks' `mechanisms` in {study.path.name})")
    # Without a choice of benchmarks, those that none of the chosen mechanisms runs are left out.
    benchmarks = benchmarks or [b for b in study.benchmarks if study.cells([b], selected)]
    options = TimingOptions(
        budget=budget_name,
        process_executions=process_executions or budget.process_executions,
        iterations=iterations or budget.iterations,
        timeout_s=timeout_s or budget.timeout_s,
        benchmarks=tuple(benchmarks or study.benchmarks),
        mechanisms=tuple(mechanisms or study.mechanisms),
        randomise=randomise,
        seed=seed,
        wait_quiet_s=wait_quiet_s,
        # iterations given on the command line are what every execution makes: no sizing then
        execution_s=None if iterations else budget.execution_s,
        min_iterations=min(budget.min_iterations or DEFAULT_MIN_ITERATIONS, iterations or budget.iterations),
        replace_dropped=budget.replace_dropped,
    )
    metric = metric or budget.metric
    if metric not in instructions.METRICS:
        raise CampaignError(f"--metric {metric}: expected one of {', '.join(instructions.METRICS)}")
    if metric == instructions.INSTRUCTIONS:
        why = instructions.unavailable()
        if why:
            raise CampaignError(f"--metric {metric}: this machine cannot count instructions: {why}")
        # Iterations are counted, not timed: sized (if the budget says so) to a count, never to valgrind's time.
        execution_s = instructions.analysed(budget.execution_ir) if budget.execution_ir and not iterations else None
        options = replace(options, metric=metric, counting=instructions.pinning(), execution_s=execution_s)
    counted = options.metric == instructions.INSTRUCTIONS
    options = replace(options, count_sizes=counted if budget.count_sizes is None else budget.count_sizes)
    if pairing is not None and pairing not in PAIRINGS:
        raise CampaignError(f"--pairing {pairing}: expected one of {', '.join(PAIRINGS)}")
    if layout_ is not None and layout_ not in LAYOUTS:
        raise CampaignError(f"--layout {layout_}: expected one of {', '.join(LAYOUTS)}")
    if turns is not None and turns not in TURNS:
        raise CampaignError(f"--turns {turns}: expected one of {', '.join(TURNS)}")
    timed = options.metric == instructions.SECONDS
    if not timed and pairing == LOCKSTEP:
        raise CampaignError("--pairing lockstep: counted instructions do not drift with the machine; nothing to pair")
    if turns not in (None, SEPARATE) and (not timed or pairing == SEQUENTIAL or not study.baseline):
        raise CampaignError(f"--turns {turns}: only lock-step blocks take turns (a timed campaign of a study "
                            "with a baseline, not --pairing sequential)")
    paired = pairing or (LOCKSTEP if timed and study.baseline else SEQUENTIAL)
    if layout_ == SHARED and paired != LOCKSTEP:
        raise CampaignError(f"--layout {SHARED}: only lock-step blocks share a layout among their members (a timed "
                            "campaign of a study with a baseline, not --pairing sequential); --layout drawn draws one "
                            "per execution")
    # Timed, a lock-step block's members share one drawn layout: each member's is as random as its own draw, and
    # where the mechanisms answer a layout alike (a VM and its twin, one program before and after a change), the
    # block's ratio no longer carries it (methodology §13, LuaJIT's nbody).
    # The budget's turns where its blocks take turns: a counted or sequential campaign of a budget based on one
    # that names them has none to take.
    options = replace(options, pairing=paired,
                      layout=layout_ or (SHARED if paired == LOCKSTEP else DRAWN if timed else FIXED),
                      turns=turns or (budget.turns if paired == LOCKSTEP else None) or SEPARATE)
    # Turns sized by time where each is timed by the wall clock (one after another, or interleaved): the ways timed by
    # CPU time size their own. Interleaved without it, LuaJIT's turns alone were one iteration beside PUC Lua's one
    # of twice its time, and the interpreters' ratios read about 2 % low (methodology §13).
    options = replace(options, turn_s=budget.turn_s if paired == LOCKSTEP and options.turns in (SEPARATE, INTERLEAVED)
                      else None)
    given = (until_ci, max_process_executions, max_time_s, until_decided or None)
    if budget.until_ci is not None or any(v is not None for v in given):
        pexecs = options.process_executions
        options = replace(
            options,
            until_ci=until_ci or budget.until_ci or DEFAULT_UNTIL_CI,
            max_process_executions=max_process_executions or budget.max_process_executions
            or max(pexecs, DEFAULT_MAX_EXECUTIONS),
            max_time_s=max_time_s or budget.max_time_s or DEFAULT_MAX_TIME_S,
            until_decided=budget.until_decided if until_decided is None else until_decided,
            look_growth=budget.look_growth, decided_within=budget.decided_within, later_share=budget.later_share,
            later_steady=budget.later_steady, nearest_first=budget.nearest_first)
        if options.until_decided and not study.baseline:
            raise CampaignError(f"--until decided: {study.name} names no baseline, so there is no ratio to decide")
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
                batch: int | None = None, metric: str = instructions.SECONDS) -> tuple[list[str], dict[str, str]]:
    mech = study.mechanisms[build.mechanism]
    bench = study.benchmarks[benchmark]
    values = build_values(study, build.build_dir) | {
        "benchmark": benchmark,
        "benchmark_file": str(study.dir / bench.file),
        "param": param,
        "iterations": str(iterations),
        "batch": str(batch) if batch else AUTO_BATCH,
    }
    env = mechanism_env(mech, values, inherit=metric == instructions.SECONDS)
    if metric == instructions.INSTRUCTIONS:
        env.update({k: expand(v, values) for k, v in study.count_env.items()})
    return expand_all(mech.run, values), env


def measure(metric: str) -> Callable[[list[str], dict[str, str], Path, int, float], Execution]:
    """What runs one process execution for the metric: the probe as it is, or under callgrind."""
    return execute_counted if metric == instructions.INSTRUCTIONS else execute


# --- the answer check --------------------------------------------------------------------------------
def sized_iterations(seconds_per_iteration: float, execution_s: float, least: int, most: int) -> int:
    """As many iterations as take about execution_s, within [least, most]."""
    wanted = int(execution_s / seconds_per_iteration) if seconds_per_iteration > 0 else most
    return max(least, min(most, wanted))


def later_iterations(iterations: int, share: float, least: int = 0) -> int:
    """An execution's iterations after its cell's first ones: `share` of the cell's, at least
    LATER_MIN_ITERATIONS and its mechanism's own `least` (a JIT's 50, so that every execution of it is
    classified: a short one would start after the longest warm-up its cell showed, which can be past its
    end), never more than the cell's."""
    return min(iterations, max(LATER_MIN_ITERATIONS, least, math.ceil(iterations * share)))


def later_parts(iterations: int, warmup: int | None, steady: int, own_s: float | None = None,
                classified_s: float | None = None) -> tuple[int, int]:
    """An execution's iterations after its cell's first ones, by later_steady, as (lead, steady): the
    iterations it makes before its steady ones (unpaired in a lock-step block) and those. `warmup`: its
    benchmark's (first_warmup); None when not known (nothing classified, or nothing that reached a steady
    state): then all of the cell's, none of them a lead. A classified cell's: the warm-up and `steady` more,
    never more than the cell's. A cell too short to classify (an interpreter's few long iterations): its first
    iteration (never counted, summary.unclassified_start) and as many as take as long as `steady` iterations
    of its benchmark's classified cells (`own_s` and `classified_s`: an iteration's seconds, from the first
    executions; first_iteration_seconds), at least UNCLASSIFIED_MIN_STEADY, never more than the cell's."""
    if warmup is None:
        return 0, iterations
    if not too_short_for_changepoints(iterations):
        total = min(iterations, max(LATER_MIN_ITERATIONS, warmup + steady))
        lead = min(warmup, total - 1)
        return lead, total - lead
    if not own_s or not classified_s:
        return 0, iterations
    wanted = max(UNCLASSIFIED_MIN_STEADY, math.ceil(steady * classified_s / own_s))
    return (1, wanted) if 1 + wanted < iterations else (0, iterations)


def _size(study: Study, build: BuildResult, benchmark: str, row: CheckRow, options: TimingOptions) -> CheckRow:
    """The row with the iterations a timed run of its cell makes, from SIZING_ITERATIONS at the real size
    (unchanged when the budget does not size them or the run fails: the timed runs will say why)."""
    if options.execution_s is None or row.status != "agrees":
        return row
    least = min(max(options.min_iterations, study.mechanisms[build.mechanism].min_iterations or 0), options.iterations)
    if least == options.iterations:  # nothing to choose (a JIT's floor at the budget's most): no sizing run
        return replace(row, iterations=least)
    metric = options.metric
    argv, env = command_for(study, build, benchmark, study.benchmarks[benchmark].param_for(options.count_sizes),
                            SIZING_ITERATIONS, row.batch, metric)
    run = measure(metric)(argv, env, study.dir, SIZING_ITERATIONS, options.timeout_s)
    if run.status != OK or run.output is None or not run.output.times:
        return row
    # Counted, an iteration's size is its count, in the analysed unit (billions): execution_s is in it too.
    per_iteration = (instructions.analysed(min(run.output.counters[instructions.INSTRUCTIONS]))
                     if metric == instructions.INSTRUCTIONS else min(run.output.times))
    return replace(row, iterations=sized_iterations(per_iteration, options.execution_s, least, options.iterations))


def _check_run(argv: list[str], env: dict[str, str], cwd: Path, timeout_s: float, metric: str
               ) -> tuple[Execution, bool | None]:
    """One check run, and whether the probe speaks the stepped mode: timed, it is first asked to (a block of
    one), and a probe that answers with its batch output is run again in batch mode."""
    if metric != instructions.SECONDS:
        return measure(metric)(argv, env, cwd, CHECK_ITERATIONS, timeout_s), None
    member = lockstep.Member(argv, env, cwd, CHECK_ITERATIONS)
    run = lockstep.run_block([member], timeout_s=timeout_s, seed="check")[0]
    if run.detail.startswith(lockstep.NOT_STEPPED):  # its batch output, or nothing: batch mode says which
        return execute(argv, env, cwd, CHECK_ITERATIONS, timeout_s), False
    return run, True


def check(study: Study, builds: dict[str, BuildResult], benchmarks: tuple[str, ...], timeout_s: float,
          on_row: Callable[[CheckRow], None] | None = None, options: TimingOptions | None = None) -> list[CheckRow]:
    """Run every available mechanism once on each benchmark's check input and compare the answers
    with the study's expected answer, or else with the answer most mechanisms gave. With a budget that
    sizes iterations to a time (options.execution_s), each agreeing cell then runs briefly at its real size."""
    rows: list[CheckRow] = []
    metric = options.metric if options is not None else instructions.SECONDS
    available = [b for b in builds.values() if b.available]
    for benchmark in benchmarks:
        bench = study.benchmarks[benchmark]
        runs: dict[str, Execution] = {}
        stepped: dict[str, bool | None] = {}
        commands: dict[str, tuple[list[str], dict[str, str]]] = {}  # argv, env: a failed one is shown to rerun
        for build in available:
            if not study.runs(benchmark, build.mechanism):
                continue
            commands[build.mechanism] = command_for(study, build, benchmark, bench.check_param, CHECK_ITERATIONS,
                                                    metric=metric)
            runs[build.mechanism], stepped[build.mechanism] = _check_run(*commands[build.mechanism], study.dir,
                                                                         timeout_s, metric)
        answers = {m: r.output.answer for m, r in runs.items() if r.status == OK and r.output}
        reference = bench.expect
        if reference is None:
            reference = majority(answers.values())
            source = f"the answer of {', '.join(m for m, a in answers.items() if a == reference)}, the majority"
        else:
            source = "the study's expect"
        for mechanism, run in runs.items():
            if run.status != OK or run.output is None:
                row = CheckRow(benchmark, mechanism, "failed", None, f"{run.status}: {run.detail}; to run it by hand: "
                               f"{by_hand(*commands[mechanism], study.dir)}")
            elif reference is None:
                given = "; ".join(f"{m}: {_short(a)}" for m, a in answers.items())
                row = CheckRow(benchmark, mechanism, "disagrees", run.output.answer,
                               f"no answer has a majority ({given})", run.output.batch)
            elif run.output.answer != reference:
                row = CheckRow(benchmark, mechanism, "disagrees", run.output.answer,
                               f"gave {_short(run.output.answer)}, expected {_short(reference)} ({source})",
                               run.output.batch)
            else:
                row = CheckRow(benchmark, mechanism, "agrees", run.output.answer, "", run.output.batch)
            row = replace(row, stepped=stepped[mechanism] if row.status == "agrees" else None)
            if options is not None:
                row = _size(study, builds[mechanism], benchmark, row, options)
            rows.append(row)
            if on_row:
                on_row(row)
    return _without_uncountable(rows, builds) if metric == instructions.INSTRUCTIONS else rows


def _short(answer: str, limit: int = 80) -> str:
    return repr(answer if len(answer) <= limit else answer[:limit] + "…")


def by_hand(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    """The command line that runs a probe as the harness ran it: its folder, the environment it set beyond
    the harness's own, and its arguments, quoted for a shell."""
    extra = {k: v for k, v in env.items() if os.environ.get(k) != v}
    return (f"cd {shlex.quote(str(cwd))} && " + ("env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in
                                                                  sorted(extra.items())) + " " if extra else "")
            + shlex.join(argv))


def _without_uncountable(rows: list[CheckRow], builds: dict[str, BuildResult]) -> list[CheckRow]:
    """Counting: a mechanism that failed under callgrind on any benchmark's check input (valgrind could not
    run it, or its probe did not bracket its iterations) is unavailable for the metric, with the first such
    failure as the reason (in `builds`, which the campaign records), instead of failing the whole check; a
    wrong answer still fails it."""
    failed: dict[str, CheckRow] = {}
    for row in rows:
        if row.status == "failed":
            failed.setdefault(row.mechanism, row)
    for name, row in failed.items():
        builds[name] = replace(builds[name], available=False, reason="cannot count instructions under callgrind: "
                               f"{row.benchmark}: {row.detail}")
    return [r for r in rows if r.mechanism not in failed]


# --- the kind ------------------------------------------------------------------------------------------
@contextmanager
def executor(store: Store, study: Study, campaign_id: int, options: TimingOptions,
             builds: dict[str, BuildResult]) -> Iterator[Execute]:
    """One process execution of a planned task: its probe, with the batch size the answer check calibrated
    and the iterations it sized (read once), after waiting for a quiet machine if the options ask. Paired in
    lock-step, the first task of a block runs the whole block (the pending tasks of its benchmark and round
    whose probes speak the stepped mode) and the block's other tasks are then answered from what it ran."""
    checked = {(r["benchmark"], r["mechanism"]): r for r in store.check_answers(campaign_id)}
    run_probe = measure(options.metric)
    ran: dict[Task, Execution] = {}  # a block's executions not yet asked for
    cpu = lockstep.lock_cpu()

    def row(task: Task) -> dict:
        return checked.get((task.benchmark, task.mechanism), {})

    def command(task: Task, iterations: int, drawn: dict[str, int] | None = None
                ) -> tuple[list[str], dict[str, str], dict[str, int] | None]:
        """Its probe's command and environment, with a layout: the block's (`drawn`), or its own draw."""
        bench = study.benchmarks[task.benchmark]
        argv, env = command_for(study, builds[task.mechanism], task.benchmark, bench.param_for(options.count_sizes),
                                iterations, row(task).get("batch"), options.metric)
        if drawn is None and options.layout in (DRAWN, SHARED):
            drawn = layout.draw()
        return argv, layout.applied(env, drawn) if drawn else env, drawn

    # per benchmark, read once (its first executions are all stored by then): its warm-up, and each
    # mechanism's iteration seconds
    firsts: dict[str, tuple[int | None, dict[str, float]]] = {}

    def first_look(benchmark: str) -> tuple[int | None, dict[str, float]]:
        if benchmark not in firsts:
            first = options.process_executions
            firsts[benchmark] = (first_warmup(store, campaign_id, benchmark, first),
                                 first_iteration_seconds(store, campaign_id, benchmark, first))
        return firsts[benchmark]

    def parts(task: Task) -> tuple[int, int]:
        """Its (lead, steady) iterations: a lead only in a later execution sized by later_steady."""
        iterations = row(task).get("iterations") or options.iterations
        if task.pexec < options.process_executions:
            return 0, iterations
        if options.later_steady is not None:
            warmup, seconds = first_look(task.benchmark)
            classified = [s for m, s in seconds.items() if not too_short_for_changepoints(
                checked.get((task.benchmark, m), {}).get("iterations") or options.iterations)]
            return later_parts(iterations, warmup, options.later_steady, seconds.get(task.mechanism),
                               max(classified, default=None))
        if options.later_share is not None:
            return 0, later_iterations(iterations, options.later_share,
                                       study.mechanisms[task.mechanism].min_iterations or 0)
        return 0, iterations

    def stepped(task: Task) -> bool:
        return options.pairing == LOCKSTEP and bool(row(task).get("stepped"))

    def quiet() -> float:
        return audit.wait_quiet(options.wait_quiet_s) if options.wait_quiet_s > 0 else 0.0

    def alone(task: Task) -> Execution:
        iterations = sum(parts(task))
        argv, env, drawn = command(task, iterations)
        waited = quiet()
        run = run_probe(argv, env, study.dir, iterations, options.timeout_s)
        if options.cpu_timed:  # its cell on the campaign's one clock
            run = together.alone_on_cpu(run)
        return _marked(run, drawn, waited)

    def iteration_seconds(tasks: list[Task]) -> list[float] | None:
        """Each task's iteration seconds where turns are sized by time, in a later block: its benchmark's first
        executions' (first_iteration_seconds). None in a first block, or where one is not known: then turns are
        sized by iterations. A first block's members are sized unlike (LuaJIT's 50 iterations, 0.5-1.5 s, beside
        PUC Lua's 0.3 s), and turns of equal time would make every one run as long as the longest: lua-vms's first
        blocks took about 255 s of its 540 so, against 157 s (2026-11-29, methodology §13). A later block's are
        sized alike (later_steady), so its turns of equal time cost little more."""
        if options.turn_s is None or tasks[0].pexec < options.process_executions:
            return None
        measured = first_look(tasks[0].benchmark)[1]
        known = [s for s in (measured.get(t.mechanism) for t in tasks) if s]
        return known if len(known) == len(tasks) else None

    def block(task: Task) -> Execution:
        # its partners: the pending tasks of its benchmark and round whose probes step
        tasks = [t for t in store.pending(campaign_id)
                 if (t.benchmark, t.pexec) == (task.benchmark, task.pexec) and stepped(t)]
        if task not in tasks:  # stored meanwhile by another harness: it still runs, as the engine asked
            tasks.append(task)
        if len(tasks) == 1:
            # Nothing to pair with (its partners are stored): alone, in batch mode, as a sequential campaign runs
            # it; a block of one would step it, and a lone stepped process runs 25 % slower here
            # (evidence/turn_cost.py).
            return alone(task)
        leads, steady = zip(*(parts(t) for t in tasks), strict=True)
        seconds = iteration_seconds(tasks)
        names = [t.mechanism for t in tasks]
        # turns anchored to the baseline's (the ratios are to it); a copy of a member's VM takes that member's
        anchor, copy_of = lockstep.anchoring(names, study.baseline, {m: study.mechanisms[m].twin_of for m in names})
        rounds, turn = (lockstep.timed_turns(list(steady), seconds, options.turn_s, anchor, copy_of)
                        if seconds and options.turn_s
                        else lockstep.turns(list(steady), like_with_like=options.turns != TOGETHER))
        # Shared: one layout for the whole block (common random numbers). Each member's layout is still
        # uniform over the draws, so a ratio's expectation over layouts is the same as with its own draws;
        # where the mechanisms answer a layout alike, the block's ratio no longer carries it.
        shared = layout.draw() if options.layout == SHARED else None
        # twins take their turns at once, interleaved one iteration each; the baseline once more alone for the others
        at_once = twins_at_once(names, turn, study) if options.turns in (TWINS, INTERLEAVED) else set()
        if at_once:  # a VM and its twin take turns of one length, the longer of theirs
            longest = max(k for m, k in zip(names, turn, strict=True) if m in at_once)
            turn = [longest if m in at_once else k for m, k in zip(names, turn, strict=True)]
        members, draws = [], []
        for t, k, lead in zip(tasks, turn, leads, strict=True):
            # the baseline beside its twin also takes a turn alone, for the members that take theirs alone
            solo = t.mechanism == study.baseline and bool(at_once) and len(at_once) < len(tasks)
            n = lead + rounds * k * (2 if solo else 1)
            argv, env, drawn = command(t, n, shared)
            members.append(lockstep.Member(argv, env, study.dir, n, k, lead, solo, t.mechanism in at_once))
            draws.append(drawn)
        waited = quiet()
        runs = lockstep.run_block(members, timeout_s=options.timeout_s, cpu=cpu,
                                  seed=f"{options.seed}:{task.benchmark}:{task.pexec}",
                                  turns=options.turns)
        for t, r, drawn in zip(tasks, runs, draws, strict=True):
            # The last one left of a block whose others failed was stopped (stepped alone it would run in
            # another regime): it runs again alone, in batch mode, as a resumed block's leftover does.
            ran[t] = alone(t) if r.status == ABANDONED else _marked(r, drawn, waited / len(tasks))
        return ran.pop(task)

    def run(task: Task) -> Execution:
        if task in ran:
            return ran.pop(task)
        return block(task) if stepped(task) else alone(task)

    yield run


def twins_at_once(mechanisms: list[str], turns: list[int], study: Study) -> set[str]:
    """Twins or interleaved: the members of a block that take their turns at the same time (interleaved: one
    iteration each), the baseline and its twins
    (Study.twins; a study that names none: the members whose turn is the baseline's), or none where the baseline
    has no twin in the block. Every other member takes its turns alone."""
    baseline = study.baseline
    if baseline not in mechanisms:
        return set()
    if study.twins:
        twins = {m for m in mechanisms if m in study.twins}
    else:
        mine = turns[mechanisms.index(baseline)]
        twins = {m for m, k in zip(mechanisms, turns, strict=True) if k == mine and m != baseline}
    return {baseline, *twins} if twins else set()


def _marked(run: Execution, drawn: dict[str, int] | None, waited: float) -> Execution:
    """The execution with the layout it drew (kept with the probe's other fields) and the wait before it."""
    if drawn is not None and run.output is not None:
        run = replace(run, output=replace(run.output, info={**run.output.info, "layout": drawn}))
    if waited and run.machine:
        run = replace(run, machine=replace(run.machine, waited_s=waited))
    return run


def _renderer(format_: str) -> Renderer:
    return lambda result, store: render(format_, result, Series(store, result.metric))


class TimingKind:
    name = TIMING
    judge = staticmethod(lambda _store, _campaign_id, _options: None)  # adaptive.py's own rules
    replacements = staticmethod(lambda store, study, campaign_id, options: replace_dropped.more(
        store, campaign_id, options, study.baseline))
    command = "run"
    noun = "timing campaign"
    unit = "process executions"
    formats = MappingProxyType({format_: _renderer(format_) for format_ in FORMATS})
    written_after_a_run = WRITTEN_AFTER_A_RUN
    executor = staticmethod(executor)
    show = staticmethod(terminal.show)

    @staticmethod
    def plan(study: Study, options: TimingOptions, available: list[str]) -> list[Task]:
        return plan(study.cells(options.benchmarks, available), options.process_executions, options.randomise,
                    options.seed)

    @staticmethod
    def check(study: Study, builds: dict[str, BuildResult], options: TimingOptions,
              on_row: Callable[[CheckRow], None] | None = None) -> list[CheckRow]:
        return check(study, builds, options.benchmarks, options.timeout_s, on_row, options)

    @staticmethod
    def check_lines(study: Study, options: TimingOptions) -> tuple[str, str]:
        n = len(options.benchmarks)
        benchmarks = f"{n} benchmark{'s' if n != 1 else ''}"
        return (f"checking answers of {benchmarks}…", f"every available mechanism gave the same answer on {benchmarks}")

    @staticmethod
    def summary(run: Execution) -> str:
        return (f"{run.status}, {len(run.output.times)} iterations in {run.wall_s:.2f} s" if run.output
                else run.status)

    @staticmethod
    def analyse(store: Store, campaign_id: int, *, seed: int | None = None, exclude_disturbed: bool = False
                ) -> Analysis:
        result = analyse(store, campaign_id, seed=seed, exclude_disturbed=exclude_disturbed)
        store.save_analysis(campaign_id, result.to_json())
        return result

    @staticmethod
    def current(store: Store, campaign_id: int, exclude_disturbed: bool = False) -> Analysis:
        return current_analysis(store, campaign_id, exclude_disturbed)

    @staticmethod
    def failed(result: Analysis) -> str | None:
        failures = result.failures()
        if not failures:
            return None
        wrong = sum(f.status == WRONG_ANSWER for f in failures)
        return (f"{len(failures)} process execution(s) failed (recorded; see the Failed column)"
                + (f", {wrong} of them with a wrong answer in timed runs" if wrong else ""))


KIND = TimingKind()
