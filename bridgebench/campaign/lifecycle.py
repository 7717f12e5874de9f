"""A campaign's life, the same for every caller (`run`, `load`, `enqueue`, `selftest`): prepare (build, check
that every mechanism gives the same answer), then start a new campaign or resume one, run what is pending,
analyse, and write the kind's reports. Progress goes to a Listener: the CLI's draws it, QUIET drops it.

Errors are one line each: CampaignError (a campaign that cannot start, resume or report), CheckFailed (the
mechanisms disagree: nothing was timed) and Interrupted (Ctrl-C or SIGTERM; what was stored is kept)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bridgebench.build import BuildResult, build_study, default_root
from bridgebench.campaign import engine, loadtest, timing
from bridgebench.campaign.kind import CampaignError, CheckRow, Kind
from bridgebench.campaign.kinds import LOAD, TIMING
from bridgebench.options import Options
from bridgebench.runner import Execution, Task
from bridgebench.store import Store
from bridgebench.study import Study

OnExecution = Callable[[Task, Execution], None]


class CheckFailed(CampaignError):
    """The mechanisms do not all give the same answer, or cannot compute it: nothing was timed."""


class Interrupted(Exception):
    """Ctrl-C or SIGTERM stopped the campaign; the message says what is stored and how to go on."""


class Listener(Protocol):
    """What a caller hears of a campaign's life. Each context manager spans the step it names."""

    def building(self, study: Study) -> AbstractContextManager[None]: ...

    def built(self, study: Study, builds: dict[str, BuildResult]) -> None: ...

    def checking(self, line: str) -> AbstractContextManager[None]: ...

    def check_row(self, row: CheckRow) -> None: ...

    def checked(self, line: str) -> None: ...

    def running(self, kind: Kind, study: Study, store: Store, campaign_id: int
                ) -> AbstractContextManager[OnExecution]: ...


class Quiet:
    """A listener that hears nothing: selftest, scripts and `--json`."""

    def building(self, study: Study) -> AbstractContextManager[None]:
        return nullcontext()

    def built(self, study: Study, builds: dict[str, BuildResult]) -> None:
        pass

    def checking(self, line: str) -> AbstractContextManager[None]:
        return nullcontext()

    def check_row(self, row: CheckRow) -> None:
        pass

    def checked(self, line: str) -> None:
        pass

    @contextmanager
    def running(self, kind: Kind, study: Study, store: Store, campaign_id: int) -> Iterator[OnExecution]:
        yield lambda task, run: None


QUIET: Listener = Quiet()


# The signals the handler below has seen: a KeyboardInterrupt raised where Python code runs inside a C call
# comes out as another exception (ctypes's ArgumentError "argument 4: KeyboardInterrupt", from numpy's array
# check in the analysis between rounds; reproduced at a round's end, 2026-11-27), and is still the interrupt.
SIGNALLED: list[int] = []


def signals_interrupt() -> None:
    """SIGINT and SIGTERM always stop a run cleanly (the execution in flight is killed and discarded), also
    when a shell started it in the background with SIGINT ignored, as POSIX shells do for `cmd &`."""
    # scipy first: the analysis between a campaign's rounds imports it, and an interrupt that lands inside
    # that import breaks it (scipy's own RuntimeError, exit 1) or leaves CPython to end the process by SIGINT
    # after the clean exit 130 (reproduced with an interrupt at a round's end, 2026-11-27).
    import scipy.stats  # noqa: F401

    def handler(signum: int, frame: object) -> None:
        SIGNALLED.append(signum)
        raise KeyboardInterrupt

    SIGNALLED.clear()  # only what this command is sent counts

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def build(study: Study, build_dir: Path | None, mechanisms: list[str] | None, listener: Listener = QUIET
          ) -> dict[str, BuildResult]:
    """The study's mechanisms built (cached), each available or with the reason it is not."""
    with listener.building(study):
        builds = build_study(study, build_dir or default_root(study), mechanisms)
    listener.built(study, builds)
    return builds


def check(kind: Kind, study: Study, builds: dict[str, BuildResult], options: Options, listener: Listener = QUIET
          ) -> list[CheckRow]:
    """Every available mechanism once on the check input, each row told to the listener as it comes."""
    checking, passed = kind.check_lines(study, options)
    with listener.checking(checking):
        rows = kind.check(study, builds, options, listener.check_row)
    if not failure(rows):
        listener.checked(passed)
    return rows


def failure(rows: list[CheckRow]) -> str | None:
    """One line when some mechanism disagrees or failed, else None."""
    bad = [r for r in rows if r.status != "agrees"]
    if not bad:
        return None
    first = bad[0]
    return (f"answer check failed for {len(bad)} benchmark × mechanism pair(s), e.g. {first.benchmark} on "
            f"{first.mechanism}: {first.status} ({first.detail}); nothing was timed")


@dataclass(frozen=True)
class Prepared:
    """What a new campaign needs first: its mechanisms built, and their answers agreeing."""

    builds: dict[str, BuildResult]
    rows: list[CheckRow]


def prepare(kind: Kind, study: Study, options: Options, build_dir: Path | None, listener: Listener = QUIET
            ) -> Prepared:
    builds = build(study, build_dir, list(options.mechanisms), listener)
    if not any(b.available for b in builds.values()):
        raise CampaignError(f"{study.name}: no mechanism could be built; see the reasons above")
    return prepare_built(kind, study, builds, options, listener)


def prepare_built(kind: Kind, study: Study, builds: dict[str, BuildResult], options: Options,
                  listener: Listener = QUIET) -> Prepared:
    """Builds in hand, checked: what a new campaign needs, or CheckFailed."""
    rows = check(kind, study, builds, options, listener)
    message = failure(rows)
    if message:
        raise CheckFailed(message)
    return Prepared(builds, rows)


def check_parts(study: Study, benchmarks: list[str] | None, mechanisms: list[str] | None
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
        parts.append((LOAD, loadtest.options_for(study, "default", servers or None)))
    if not parts:
        raise CampaignError(f"{study.name}: nothing to check among {', '.join(mechanisms or benchmarks or [])}")
    return parts


def start(kind: Kind, study: Study, store: Store, options: Options, build_dir: Path | None,
          listener: Listener = QUIET, prepared: Prepared | None = None) -> int:
    """Prepare (unless given what was prepared), create a campaign and run it to its end; its id."""
    def begin(held: engine.Session) -> tuple[int, Options, dict[str, BuildResult]]:
        ready = prepared or prepare(kind, study, options, build_dir, listener)
        return held.start(store, kind, study, options, ready.builds, ready.rows), options, ready.builds

    return _run(kind, study, store, begin, listener)


def resume(kind: Kind, study: Study, store: Store, campaign_id: int | None, build_dir: Path | None,
           listener: Listener = QUIET, max_time_s: float | None = None) -> int:
    """Continue the given campaign, or the study's latest unfinished one of this kind, with its mechanisms
    built as they were; its id. `max_time_s`: its adaptive time cap raised to this (engine.resumable)."""
    def begin(held: engine.Session) -> tuple[int, Options, dict[str, BuildResult]]:
        options = held.resume(store, kind, study, campaign_id, max_time_s)
        builds = build(study, build_dir, list(options.mechanisms), listener)
        assert held.campaign_id is not None  # resume() chose one or raised
        engine.verify_builds(store, held.campaign_id, builds)
        engine.keep_options(store, held.campaign_id, options)
        return held.campaign_id, options, builds

    return _run(kind, study, store, begin, listener)


Begin = Callable[[engine.Session], tuple[int, Options, dict[str, BuildResult]]]


def _run(kind: Kind, study: Study, store: Store, begin: Begin, listener: Listener) -> int:
    """Begin (create or claim the campaign), then run what is pending; the campaign's lock is released
    whatever happens, and an interrupt says what is stored."""
    interrupted = False
    with engine.session() as held:
        try:
            cid, options, builds = begin(held)
            with listener.running(kind, study, store, cid) as on_execution:
                engine.run_pending(store, kind, study, cid, options, builds, on_execution)
        except Exception:
            if not SIGNALLED:
                raise
            interrupted = True
        except KeyboardInterrupt:
            interrupted = True
        if interrupted:
            if held.campaign_id is None:
                raise Interrupted("interrupted before the campaign started: nothing was timed or stored") from None
            stored = len(store.done_seqs(held.campaign_id))
            raise Interrupted(f"interrupted: {stored} {kind.unit} of campaign {held.campaign_id} are stored; "
                              f"continue with `bridgebench {kind.command} {study.argument} --resume`") from None
    return cid


def write_reports(kind: Kind, result: Any, store: Store, study: Study, campaign_id: int, report_dir: Path
                  ) -> list[Path]:
    """The kind's report files for a run: STUDY-CAMPAIGN.SUFFIX in report_dir."""
    stem, written = f"{study.name}-{campaign_id}", []
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
        for format_, suffix in kind.written_after_a_run.items():
            path = report_dir / f"{stem}.{suffix}"
            path.write_text(kind.formats[format_](result, store), encoding="utf-8")
            written.append(path)
    except OSError as e:
        raise CampaignError(f"--report-dir {report_dir}: cannot write the reports: {e.strerror} (the campaign is "
                            f"stored; `bridgebench report {campaign_id}` writes them again)") from None
    return written


def chosen(store: Store, campaign_id: int | None, study: str | None) -> int:
    """The campaign a command names, else the latest one (of the study, if named)."""
    if campaign_id is not None:
        return campaign_id
    latest = store.latest_campaign(study)
    if latest is None:
        raise CampaignError(f"no campaign in {store.path}" + (f" for study {study}" if study else ""))
    return latest.id
