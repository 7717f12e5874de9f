"""The tables of the commands other than a campaign's report: build, list, selftest, doctor, status. The
CLI parses and calls; drawing happens here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from bridgebench import reference
from bridgebench.build import BuildResult
from bridgebench.calibrate import FLAT_TARGET, MachineCalibration
from bridgebench.campaign.kind import CheckRow, Kind
from bridgebench.campaign.lifecycle import OnExecution
from bridgebench.environment import Advice
from bridgebench.fleet import Status
from bridgebench.options import delta_table
from bridgebench.reference import Reading
from bridgebench.report.terminal import grid
from bridgebench.runner import OK, Execution, Task
from bridgebench.selftest import FAIL, INCONCLUSIVE, PASS, Finding, SelftestReport, Tally
from bridgebench.store import Store
from bridgebench.study import Study
from bridgebench.timing.report.tables import deltas_by_length


def builds_table(study: Study, builds: dict[str, BuildResult]) -> Table:
    table = Table(title=f"Mechanisms of {study.name}", title_justify="left")
    for column in ("Mechanism", "Status", "Version / reason"):
        table.add_column(column, overflow="fold")
    for b in builds.values():
        status = ("[green]available[/]" + (" (cached)" if b.cached else "")) if b.available else "[red]unavailable[/]"
        table.add_row(escape(study.mechanisms[b.mechanism].label), status,
                      escape(b.version if b.available else b.reason))
    return table


class Drawn:
    """A campaign's life on stderr (lifecycle.Listener): the builds, the check's disagreements, and a progress
    bar that says which executions failed as they fail; on a pipe or in a file, a line an execution."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @contextmanager
    def building(self, study: Study) -> Iterator[None]:
        with self.console.status(f"building {study.name}…"):
            yield

    def built(self, study: Study, builds: dict[str, BuildResult]) -> None:
        self.console.print(builds_table(study, builds))

    @contextmanager
    def checking(self, line: str) -> Iterator[None]:
        with self.console.status(escape(line)):
            yield

    def check_row(self, row: CheckRow) -> None:
        if row.status != "agrees":
            self.console.print(f"  [red]{row.status}[/]: " + escape(f"{row.benchmark} on {row.mechanism}: "
                                                                    f"{row.detail}"), highlight=False)

    def checked(self, line: str) -> None:
        self.console.print("[green]check passed[/]: " + escape(line))

    @contextmanager
    def running(self, kind: Kind, study: Study, store: Store, campaign_id: int) -> Iterator[OnExecution]:
        total = len(store.planned(campaign_id))
        done = total - store.pending_count(campaign_id)
        log = not self.console.is_terminal
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn())
        with Progress(*columns, console=self.console, disable=log, transient=False) as progress:
            bar = progress.add_task(f"{study.name}", total=total, completed=done)
            stored = [done]
            said_speed: list[str | None] = []

            def on_execution(task: Task, run: Execution) -> None:
                if not said_speed:  # the run's opening reading is stored by now: a slow machine shows at once
                    said_speed.append(speed_now(store, campaign_id))
                    if said_speed[0]:
                        progress.console.print(escape(said_speed[0]), highlight=False, soft_wrap=True)
                # An adaptive budget adds rounds as it goes: the total is what is stored and what is pending now
                # (a count, not the whole plan read again after every execution).
                stored[0] += 1
                planned = stored[0] + store.pending_count(campaign_id)
                progress.update(bar, advance=1, total=planned,
                                description=f"{study.name}: {task.benchmark} / {task.mechanism}")
                if log:
                    self.console.print(escape(
                        f"[{stored[0]}/{planned}] {study.name}: {task.benchmark} / {task.mechanism} (process "
                        f"execution {task.pexec + 1}): {kind.summary(run)}"
                        + (f": {run.detail}" if run.status != OK else "")), highlight=False, soft_wrap=True)
                elif run.status != OK:
                    progress.console.print(f"  [yellow]{run.status}[/]: " + escape(
                        f"{task.benchmark} on {task.mechanism} (process execution {task.pexec + 1}): {run.detail}"),
                        highlight=False)

            yield on_execution


def speed_now(store: Store, campaign_id: int) -> str | None:
    """The run's opening speed reading against the calibration the campaign is judged with, as doctor says it
    (reference.advice), or None before there is one."""
    readings = store.speed_readings(campaign_id)
    if not readings:
        return None
    campaign = store.campaign(campaign_id)
    said = reference.advice(Reading(**readings[-1]), store.calibration(campaign.machine, campaign.created),
                            campaign.environment)
    if said.ok:
        return f"machine speed: {said.state}" + (f" ({said.advice})" if said.advice else "")
    return f"machine speed: {said.state}; WARNING: {said.advice}"


def list_tables(studies: list[dict[str, Any]], campaigns: list[dict[str, Any]], store: str) -> list[Table]:
    """`bridgebench list`: the studies (or why one cannot be read), and the campaigns in the store."""
    table = Table(title="Studies", title_justify="left")
    for column in ("Study", "Mechanisms", "Benchmarks", "Title / error"):
        table.add_column(column, overflow="fold")
    for s in studies:
        table.add_row(escape(s["name"]), str(len(s.get("mechanisms", []))), str(len(s.get("benchmarks", []))),
                      escape(s["title"]) if "title" in s else f"[red]{escape(s['error'])}[/]")
    tables = [table]
    if campaigns:
        table = Table(title=f"Campaigns in {escape(store)}", title_justify="left")
        for column in ("Id", "Study", "State", "Budget", "Machine"):
            table.add_column(column)
        for c in campaigns:
            table.add_row(str(c["id"]), escape(c["study"]), c["state"], escape(c["budget"]), escape(c["machine"]))
        tables.append(table)
    return tables


SELFTEST_LEGEND = ("quiet, disturbed: the verdicts that match the planted truth, of the comparisons on quiet "
                   "executions and of those the disturbance audit flagged (the goal is judged on the quiet ones); "
                   "too few: comparisons left undecided for want of process executions, counted apart")


def selftest_table(title: str, tallies: list[Tally]) -> Table:
    """The self-test's tally, one line a check and no borders (it fits 80 columns); SELFTEST_LEGEND below it
    says what the short headers count."""
    style = {PASS: "", FAIL: "red", INCONCLUSIVE: "yellow"}
    return grid(("Check", "Goal", "Quiet", "Disturbed", "Too few", "Verdict"),
                [(t.check, f"≥ {t.target:.0%}", f"{t.quiet_right}/{t.quiet}", f"{t.disturbed_right}/{t.disturbed}",
                  str(t.undecided), t.verdict) for t in tallies], title, [style[t.verdict] for t in tallies])


def wrong_finding(f: Finding) -> str:
    """A wrong verdict as the self-test finds it (markup: the mark is coloured)."""
    mark = "[yellow]wrong, flagged disturbed[/]" if f.disturbed else "[red]WRONG[/]"
    return f"  {mark} " + escape(f"#{f.repetition} {f.check}: {f.subject}: expected {f.expected}, found {f.found}")


def selftest(title: str, report: SelftestReport, console: Console) -> None:
    """The self-test's tally, its legend, the δ its planted classes were judged with, and its verdict."""
    tallies = report.tallies()
    console.print(selftest_table(title, tallies))
    console.print(SELFTEST_LEGEND, style="dim", highlight=False)
    for words in sorted(report.deltas):
        console.print(f"planted classes judged with {words}", highlight=False, soft_wrap=True)
    if report.verdict == INCONCLUSIVE:
        for t in tallies:
            if t.why:
                console.print(f"inconclusive: {t.check}: {t.why}", highlight=False, soft_wrap=True)
        if any(t.too_few_quiet for t in tallies):
            console.print("see `bridgebench doctor`, or try `--wait-quiet`", highlight=False, soft_wrap=True)
    else:
        console.print(f"self-test: {report.verdict}", highlight=False)


def selftest_json(report: SelftestReport) -> dict[str, Any]:
    return {"verdict": report.verdict, "ok": report.verdict != FAIL,
            "tally": [t.__dict__ | {"verdict": t.verdict, "why": t.why} for t in report.tallies()],
            "findings": [f.__dict__ for f in report.findings]}


def doctor_table(findings: list[Advice]) -> Table:
    table = Table(title="What makes this machine noisy", title_justify="left")
    for column in ("", "Topic", "State", "Advice"):
        table.add_column(column, overflow="fold")
    for f in findings:
        table.add_row("[green]ok[/]" if f.ok else "[yellow]![/]", f.topic, escape(f.state), f.advice)
    return table


def status(st: Status, console: Console) -> None:
    """`bridgebench status`: where a shared campaign stands."""
    eta = "done" if st.eta_s == 0 else "unknown (nothing stored yet)" if st.eta_s is None else \
        f"about {st.eta_s / 60:.0f} min at the current pace" if st.eta_s >= 90 else f"about {st.eta_s:.0f} s"
    console.print(escape(f"campaign {st.campaign} of {st.study} ({st.state}): {st.stored}/{st.planned} process "
                         f"executions stored, {st.queued} queued, {st.running} running, {st.failed_jobs} jobs "
                         f"failed; ETA {eta}"), highlight=False)
    table = Table(title="Per machine", title_justify="left")
    for column in ("Machine", "CPU", "Stored", "Of them failed"):
        table.add_column(column, overflow="fold")
    for m in st.machines:
        table.add_row(escape(m.machine), escape(m.cpu), str(m.done + m.failed), str(m.failed))
    console.print(table)


def calibration_progress(console: Console, executions: int) -> Callable[[int, int, Execution], None]:
    """A line for each execution of the constant program as `calibrate` runs it."""
    def progress(i: int, n: int, run: Execution) -> None:
        console.print(f"[{i + 1}/{executions}] constant program, {n} iterations: {run.status}, {run.wall_s:.2f} s",
                      highlight=False)
    return progress


def calibration_lines(m: MachineCalibration) -> list[str]:
    """What `bridgebench calibrate` found, in plain lines (readable piped as well as on a terminal): each
    length's findings, then the δ campaigns will use at each."""
    lines = [f"machine {m.machine}: {m.lengths[0].executions} process executions of a constant program at each "
             f"of {len(m.lengths)} length(s)"]
    for c in m.lengths:
        shares = ", ".join(f"{float(d):.1%}: {s:.0%}" for d, s in c.flat_by_delta.items())
        shifts = ", ".join(f"P{p} {v:.2%}" for p, v in c.largest_shift.items())
        verdict = (f"δ = {c.delta_relative:.1%}: the smallest δ at which at least {FLAT_TARGET:.0%} of its "
                   "executions are flat" if c.reached else
                   f"δ = {c.delta_relative:.1%}, the largest tried, and still fewer than {FLAT_TARGET:.0%} of its "
                   "executions are flat: this machine is too noisy for a classification of executions this long "
                   "to mean much (`bridgebench doctor`)")
        lines += [
            f"{c.iterations} iterations ({c.execution_s:.2f} s an execution, {c.iteration_ms:.2f} ms an iteration):",
            f"  flat at each δ: {shares}",
            f"  largest segment shift per execution (δ = 0): {shifts}",
            f"  spread between executions (CV of their medians): {c.between_executions_cv:.2%}",
            "  start-up profile (each tenth of the iterations ÷ the second half's median): "
            + " ".join(f"{x:.3f}" for x in c.startup_profile),
            f"  {verdict}",
        ]
    table = deltas_by_length(delta_table(m.to_json()))
    lines.append(f"δ by execution length (never smaller for a longer one): {table}; stored with the machine: each "
                 "execution of a campaign created on it from now on is classified with the δ of the length "
                 "nearest its own")
    return lines
