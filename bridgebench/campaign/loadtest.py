"""The load kind of campaign: the study's servers under the load its [load] table declares.

Order of work: check that every server gives each request the same answer (its HTTP status), then the
planned process executions — each one a fresh server, one load run, the server stopped — stored as they
end. The plan puts every closed-loop saturation run first; a constant-rate run's target is its fraction of
the mean saturation its server reached in this campaign (read from the store, so a resumed campaign aims
at the same rates). The overload phase targets `overload` × saturation, as the seed's wrk2 run did.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bridgebench import audit
from bridgebench.build import BuildResult, build_values, mechanism_env
from bridgebench.campaign import adaptive
from bridgebench.campaign.kind import CampaignError, CheckRow, Execute, Renderer
from bridgebench.loadtest import analysis, driver, report, totals
from bridgebench.loadtest.phases import Phase, phases, saturation_rates
from bridgebench.loadtest.result import LoadAnalysis
from bridgebench.loadtest.server import Server, ServerError
from bridgebench.majority import majority
from bridgebench.options import LOAD, LoadOptions
from bridgebench.placeholders import expand_all
from bridgebench.protocol import ProbeOutput
from bridgebench.runner import CRASHED, OK, PROTOCOL, SPAWN_FAILED, TIMEOUT, Execution, Task
from bridgebench.store import Store
from bridgebench.study import Study

NO_ANSWERS = "no answers"  # a load run in which the server answered no request
NO_RATE = "no rate"  # a constant-rate run whose server reached no saturation rate to take a fraction of
CHECK_TIMEOUT_S = 10.0


# `load --until ci=…` given alone takes the others from these: at most twice the budget's runs a cell, and
# at most an hour of runs in all.
DEFAULT_CAP_FACTOR, DEFAULT_MAX_TIME_S = 2, 3600.0


def options_for(study: Study, budget: str, mechanisms: list[str] | None, process_executions: int | None = None,
                duration_s: float | None = None, warmup_s: float | None = None, until_ci: float | None = None,
                max_process_executions: int | None = None, max_time_s: float | None = None) -> LoadOptions:
    if study.load is None:
        raise CampaignError(f"{study.name} declares no [load]; its mechanisms are timed with `bridgebench run`")
    if budget not in study.load.budgets:
        raise CampaignError(f"{study.path}: no load budget '{budget}' (has: {', '.join(study.load.budgets)})")
    chosen = mechanisms or study.servers
    not_servers = [m for m in chosen if m not in study.servers]
    if not_servers:
        raise CampaignError(f"{study.name}: no server {', '.join(not_servers)} (has: {', '.join(study.servers)})")
    base = study.load.budgets[budget]
    options = LoadOptions(budget, process_executions or base.process_executions,
                          base.warmup_s if warmup_s is None else warmup_s, duration_s or base.duration_s,
                          tuple(chosen))
    if not (options.duration_s > 0 and options.warmup_s >= 0 and options.duration_s + options.warmup_s <= 3600):
        raise CampaignError(f"a load run of {options.warmup_s:g} + {options.duration_s:g} s: expected above 0 "
                            "and at most an hour")
    if until_ci is None and (max_process_executions is not None or max_time_s is not None):
        raise CampaignError("--max-executions and --max-time bound an adaptive load campaign: give --until ci=SHARE")
    if until_ci is not None:
        if not 0 < until_ci < 1:
            raise CampaignError(f"--until ci={until_ci}: expected a share above 0 and below 1 (5% or 0.05)")
        cap = max_process_executions or DEFAULT_CAP_FACTOR * options.process_executions
        if cap < options.process_executions:
            raise CampaignError(f"--max-executions {cap}: expected at least the {options.process_executions} runs "
                                "every cell gets first")
        options = replace(options, until_ci=until_ci, max_process_executions=cap,
                          max_time_s=max_time_s or DEFAULT_MAX_TIME_S)
    return options


def plan_runs(servers: list[str], phase_list: list[Phase], process_executions: int, ceiling: str | None = None
              ) -> list[Task]:
    """Saturation runs first (round robin over the servers), then each round of the constant rates. The
    driver's ceiling server runs at saturation only: its figure is the most the driver can send."""
    saturation = [p for p in phase_list if p.fraction is None]
    rates = [p for p in phase_list if p.fraction is not None]
    order = [(p.name, m, pexec) for group in (saturation, rates) for pexec in range(process_executions)
             for p in group for m in servers if p.fraction is None or m != ceiling]
    return [Task(seq, phase, mechanism, pexec) for seq, (phase, mechanism, pexec) in enumerate(order)]


# --- servers and requests ----------------------------------------------------------------------------
def _cpus(cpus: str | None) -> tuple[str, ...]:
    """The taskset prefix pinning to `cpus`, or nothing where taskset is missing or the CPUs do not exist."""
    if not cpus or shutil.which("taskset") is None:
        return ()
    wanted = analysis.cpu_set(cpus) or set()
    return ("taskset", "-c", cpus) if wanted <= os.sched_getaffinity(0) else ()


def server_for(study: Study, build: BuildResult) -> Server:
    mech = study.mechanisms[build.mechanism]
    values = build_values(study, build.build_dir)
    argv = [*_cpus(mech.cpus), *expand_all(mech.serve, values)]
    return Server(argv, mechanism_env(mech, values), study.dir, ready_path=mech.ready,
                  ready_timeout_s=mech.ready_timeout_s)


def write_spec(study: Study, folder: Path) -> Path:
    """The driver's request file (bridgebench/loadtest/driver: variants with weights), bodies as absolute paths."""
    assert study.load is not None
    variants = [{"name": r.name, "weight": r.weight, "method": r.method, "path": r.path, "headers": r.headers,
                 **({"body_file": str(study.dir / r.body_file)} if r.body_file else {})}
                for r in study.load.requests]
    path = folder / "requests.json"
    path.write_text(json.dumps({"variants": variants}))
    return path


def send_once(server: Server, study: Study, name: str) -> int:
    """One request of the study's `name` variant: the status of its answer."""
    assert study.load is not None
    req = next(r for r in study.load.requests if r.name == name)
    body = (study.dir / req.body_file).read_bytes() if req.body_file else None
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=CHECK_TIMEOUT_S)
    try:
        conn.request(req.method, req.path, body=body, headers=req.headers)
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def check(study: Study, builds: dict[str, BuildResult], mechanisms: tuple[str, ...],
          on_row: Callable[[CheckRow], None] | None = None) -> list[CheckRow]:
    """Start each server once and send it every request once: each must get the status the study expects
    (or, where it expects none, the status most servers give). Rows are named `request:NAME`."""
    assert study.load is not None
    statuses: dict[str, dict[str, int | str]] = {r.name: {} for r in study.load.requests}
    counted: dict[str, CheckRow] = {}
    for mechanism in mechanisms:
        if not builds[mechanism].available or mechanism == study.load.ceiling:
            continue  # the ceiling answers 204 to everything: it measures the driver, not the study's work
        try:
            with server_for(study, builds[mechanism]) as server:
                for req in study.load.requests:
                    try:
                        statuses[req.name][mechanism] = send_once(server, study, req.name)
                    except (OSError, http.client.HTTPException) as e:
                        statuses[req.name][mechanism] = f"no answer: {e}"
                if study.load.totals:
                    counted[mechanism] = _check_totals(study, server, mechanism, statuses)
        except ServerError as e:
            for req in study.load.requests:
                statuses[req.name][mechanism] = str(e)
    rows = []
    for req in study.load.requests:
        got = statuses[req.name]
        common = req.expect_status or majority(str(s) for s, m in zip(got.values(), got, strict=True)
                                               if isinstance(s, int) and m not in req.expect_status_of)
        for mechanism, status in got.items():
            expected = req.expect_status_of.get(mechanism, common)
            if not isinstance(status, int):
                row = CheckRow(f"request:{req.name}", mechanism, "failed", None, status[:300])
            elif expected is None:
                row = CheckRow(f"request:{req.name}", mechanism, "disagrees", str(status), "no status has a majority")
            elif str(status) != str(expected):
                row = CheckRow(f"request:{req.name}", mechanism, "disagrees", str(status), f"expected {expected}")
            else:
                row = CheckRow(f"request:{req.name}", mechanism, "agrees", str(status), "")
            rows.append(row)
            if on_row:
                on_row(row)
    for row in counted.values():
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def _check_totals(study: Study, server: Server, mechanism: str, statuses: dict[str, dict[str, int | str]]
                  ) -> CheckRow:
    """After one request of each variant: the server's own totals must hold exactly those (row `totals`)."""
    assert study.load is not None and study.load.totals
    answered = {r.name: 1 for r in study.load.requests if isinstance(statuses[r.name].get(mechanism), int)}
    by_status: dict[str, int] = {}
    for name in answered:
        key = str(statuses[name][mechanism])
        by_status[key] = by_status.get(key, 0) + 1
    try:
        got = _totals(study, server, answered, answered, by_status)
    except totals.TotalsError as e:
        return CheckRow("totals", mechanism, "failed", None, str(e)[:300])
    if got is None:
        return CheckRow("totals", mechanism, "agrees", "counts nothing", "")
    return CheckRow("totals", mechanism, "agrees" if got.exact else "disagrees",
                    f"{min(got.counted.values(), default=0)} of {got.answered}", "" if got.exact else got.describe())


# --- one load run ------------------------------------------------------------------------------------
def _failed(status: str, detail: str, started: float, t0: float, stderr: str = "") -> Execution:
    return Execution(status, detail[:300], None, stderr, None, None, started, time.monotonic() - t0)


def execute(study: Study, build: BuildResult, options: LoadOptions, rate: float, spec: Path) -> Execution:
    """One process execution of a load campaign: start the server, one load run, stop the server."""
    assert study.load is not None
    started, t0 = time.time(), time.monotonic()
    driver_prefix = _cpus(study.load.driver_cpus)
    driver_env = dict(os.environ) | ({"GOMAXPROCS": str(len(analysis.cpu_set(study.load.driver_cpus) or ()))}
                                     if driver_prefix and study.load.driver_cpus else {})
    server = server_for(study, build)
    ready = False
    try:
        with server:
            ready = True
            result = driver.run(spec, server, rate=rate, connections=study.load.connections,
                                warmup_s=options.warmup_s, duration_s=options.duration_s, prefix=driver_prefix,
                                env=driver_env)
            if study.load.totals and build.mechanism != study.load.ceiling:
                result["totals"] = run_totals(study, server, result)
            exited = server.proc.poll() if server.proc else None
    except ServerError as e:  # before it was ready: it could not start; after: it left processes behind
        tail = server.stopped.stderr_tail if server.stopped else ""
        return _failed(CRASHED if ready else SPAWN_FAILED, str(e), started, t0, tail)
    except driver.DriverError as e:
        tail = server.stopped.stderr_tail if server.stopped else ""
        return _failed(TIMEOUT if "did not end" in str(e) else PROTOCOL, str(e), started, t0, tail)
    stopped = server.stopped
    tail = stopped.stderr_tail if stopped else ""
    if exited is not None:
        return _failed(CRASHED, f"the server exited (status {exited}) during the load run", started, t0, tail)
    if result["completed"] == 0 and not all_censored(result):
        return _failed(NO_ANSWERS, f"no request was answered; errors: {result['errors']}", started, t0, tail)
    machine = result.pop("machine", None)
    checked = None
    if machine:
        checked = audit.Audit(wall_s=machine["wall_s"], cpu_s=machine["own_cpu_s"],
                              others_cpu_s=machine["others_cores"] * machine["wall_s"],
                              steal_s=machine["steal_cores"] * machine["wall_s"], load1=machine["load1"],
                              disturbed=machine["disturbed"])
    return Execution(OK, "", 0, tail, ProbeOutput(times=[], answer="", info=result), None, started,
                     time.monotonic() - t0, checked)


def _totals(study: Study, server: Server, answered: dict[str, int], attempted: dict[str, int],
            statuses: dict[str, int]) -> totals.Totals | None:
    """The server's totals against what was answered and attempted, once they have settled (the log phase runs
    after the answer; a timer, a buffer or a collector may still hold counts)."""
    assert study.load is not None and study.load.totals
    paths = {r.name: r.path for r in study.load.requests}
    return totals.settled(server.port, study.load.totals, study.load.settle_s, lambda doc: totals.compare(
        doc, answered_variants=answered, attempted_variants=attempted, answered_statuses=statuses,
        variant_paths=paths))


def run_totals(study: Study, server: Server, result: dict[str, Any]) -> dict[str, Any] | None:
    """The server's own totals after a load run, against the driver's (None: the server counts nothing)."""
    assert study.load is not None and study.load.totals
    try:
        got = _totals(study, server, result.get("answered_variants") or {}, result.get("attempted_variants") or {},
                      result.get("answered_statuses") or {})
    except totals.TotalsError as e:
        return {"error": str(e)[:300]}
    return got.to_json() if got else None


def all_censored(result: dict[str, Any]) -> bool:
    """A constant-rate run in which the server answered (in the warm-up, at least) but fell so far behind that
    every request of the measured window was still waiting at the end: a measurement (each request censored
    at end - intended), not a failure. A server that answered nothing at all is the failure."""
    return (result["mode"] == "constant-rate" and result.get("answered", 0) > 0 and result["censored"] > 0
            and not result["errors"])


def describe(result: dict[str, Any]) -> str:
    """One line for the progress display."""
    lat = result.get("latency", {})
    return f"{result.get('achieved_rate', 0):.0f} req/s, p99 {lat.get('p99', 0) * 1e3:.2f} ms"


# --- the kind ------------------------------------------------------------------------------------------
@contextmanager
def executor(store: Store, study: Study, campaign_id: int, options: LoadOptions,
             builds: dict[str, BuildResult]) -> Iterator[Execute]:
    """One load run of a planned task: a fresh server at the phase's rate. The request file is written once
    for the campaign's run; the saturation rates are read once, after every saturation run (plan_runs puts
    them first), so a resumed campaign aims at the same rates."""
    assert study.load is not None
    fractions = {p.name: p.fraction for p in phases(study.load)}
    saturated: dict[str, list[float]] | None = None
    with tempfile.TemporaryDirectory(prefix="bridgebench-load-") as work:
        spec = write_spec(study, Path(work))

        def run(task: Task) -> Execution:
            nonlocal saturated
            fraction = fractions[task.benchmark]
            if fraction is None:
                return execute(study, builds[task.mechanism], options, 0.0, spec)
            if saturated is None:  # the first runs' only: an adaptive round's extra ones must not move targets
                saturated = saturation_rates(store.executions(campaign_id), first=options.process_executions)
            rates = saturated.get(task.mechanism)
            if not rates:
                return _failed(NO_RATE, "no saturation run of this server succeeded, so there is no rate to aim "
                               "at", time.time(), time.monotonic())
            return execute(study, builds[task.mechanism], options, fraction * sum(rates) / len(rates), spec)

        yield run


def _renderer(format_: str) -> Renderer:
    return lambda result, _store: report.FORMATS[format_](result)


class LoadKind:
    name = LOAD
    command = "load"
    noun = "load campaign"
    unit = "load runs"
    formats = MappingProxyType({format_: _renderer(format_) for format_ in report.FORMATS})
    written_after_a_run = report.SUFFIXES
    executor = staticmethod(executor)
    show = staticmethod(report.show)

    @staticmethod
    def plan(study: Study, options: LoadOptions, available: list[str]) -> list[Task]:
        assert study.load is not None
        return plan_runs(available, phases(study.load), options.process_executions, study.load.ceiling)

    @staticmethod
    def check(study: Study, builds: dict[str, BuildResult], options: LoadOptions,
              on_row: Callable[[CheckRow], None] | None = None) -> list[CheckRow]:
        return check(study, builds, options.mechanisms, on_row)

    @staticmethod
    def check_lines(study: Study, options: LoadOptions) -> tuple[str, str]:
        assert study.load is not None
        return ("checking every server's answer to each request…",
                f"every server gave each of {len(study.load.requests)} requests the expected status")

    @staticmethod
    def summary(run: Execution) -> str:
        return describe(run.output.info) if run.output else run.status

    @staticmethod
    def analyse(store: Store, campaign_id: int, *, seed: int | None = None, exclude_disturbed: bool = False
                ) -> LoadAnalysis:
        result = analysis.analyse(store, campaign_id)
        store.save_analysis(campaign_id, result.to_json())
        return result

    @staticmethod
    def current(store: Store, campaign_id: int, exclude_disturbed: bool = False) -> LoadAnalysis:
        return analysis.current(store, campaign_id)

    @staticmethod
    def failed(result: LoadAnalysis) -> str | None:
        return f"{result.failed} load run(s) failed (recorded; see Failures)" if result.failed else None

    @staticmethod
    def judge(store: Store, campaign_id: int, options: LoadOptions) -> adaptive.Judge | None:
        budget = options.adaptive
        if budget is None:
            return None

        def judged(open_cells: list[adaptive.Cell], _round: int) -> adaptive.Judged:
            result = analysis.analyse(store, campaign_id)
            out: adaptive.Judged = {}
            for cell in open_cells:
                c = result.cell(*cell)
                stored = c.ok + len(c.failures) if c is not None else 0
                measured = "measured" if c is not None and c.ok else None
                widest = analysis.widest(c) if c is not None else None
                out[cell] = (stored, measured, adaptive.decide(stored, measured, widest, measured, budget.first,
                                                               budget.until_ci, budget.cap, analysis.MIN_RUNS))
            return out

        return judged

    @staticmethod
    def replacements(store: Store, study: Study, campaign_id: int, options: LoadOptions) -> list[Task]:
        return []  # a load run has no blocks to replace


KIND = LoadKind()
