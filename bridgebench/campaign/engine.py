"""The one campaign engine, for every kind (kind.py): create a campaign from a kind's plan, choose and
claim one to resume, run what is pending (with an adaptive budget, round after round), store each
execution as it ends, and keep the run state.

The rules that hold for every kind live here once:
- a campaign is *running* while a harness runs it, *interrupted* when the harness stopped before its plan
  was run (Ctrl-C, a kill, an error), and *done* when every planned execution is stored;
- a campaign resumes only with the study file it started with, its mechanisms built as they were, and a
  harness that owns it (store.claim); a finished one only to give its cells that stopped out of time more time;
- an execution is stored in one transaction as soon as it ends; one that another harness stored first is
  not stored twice, and a value the store cannot hold makes that execution a protocol violation, not the
  campaign's end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

from bridgebench import environment, reference, shared_cache
from bridgebench.build import BuildResult
from bridgebench.campaign import adaptive, kinds
from bridgebench.campaign.kind import CampaignError, CheckRow, Execute, Kind
from bridgebench.locks import Lock
from bridgebench.options import CampaignConfig, Options, TimingOptions, read
from bridgebench.runner import PROTOCOL, Execution, Task
from bridgebench.store import AlreadyStored, Campaign, Store
from bridgebench.study import MAX_TIMEOUT_S, Study
from bridgebench.timing.lockstep import lock_cpu

OnExecution = Callable[[Task, Execution], None]


def create(store: Store, kind: Kind, study: Study, options: Options, builds: dict[str, BuildResult],
           checked: list[CheckRow]) -> int:
    """A new campaign in the store: its config, its plan, the machine, the builds and the answer check."""
    available = [m for m in options.mechanisms if builds[m].available]
    tasks = kind.plan(study, options, available)
    env = environment.capture()
    machine = environment.machine_id(env)
    options = options.calibrated(store.calibration(machine))
    config = {**CampaignConfig(kind.name, study.raw, options).to_stored(), "study_files": study.files_hash()}
    campaign_id = store.create_campaign(study.name, str(study.path), study.config_hash(), config,
                                        environment.git_sha(), env, machine, tasks)
    store.record_builds(campaign_id, builds, {m: study.mechanisms[m].label for m in builds})
    store.record_check(campaign_id, [(r.benchmark, r.mechanism, r.status, r.answer, r.detail, r.batch, r.iterations,
                                      r.stepped)
                                     for r in checked])
    return campaign_id


def require_unchanged(study: Study, campaign: Campaign, what: str) -> None:
    """A campaign goes on only with the study file it started with: it must measure the same thing."""
    if campaign.config_hash != study.config_hash():
        raise CampaignError(f"{study.path} has changed since campaign {campaign.id} started; {what}")


def resumable(store: Store, kind: Kind, study: Study, campaign_id: int | None, max_time_s: float | None = None
              ) -> tuple[int, Options]:
    """The campaign `--resume` continues (the given one, else the study's latest unfinished one of this
    kind) and its options, or a one-line CampaignError saying why there is none. With `max_time_s`, an adaptive
    campaign's time cap is raised to it (raised()), and a finished one whose cells stopped out of time (the
    study's latest, when none is unfinished) goes on; keep_options stores the raised cap once it is safe to."""
    if campaign_id is None:
        mine = [c for c in store.campaigns(study.name) if read(c).kind == kind.name]
        unfinished = [c for c in mine if c.state != "done"]
        if not unfinished and not (max_time_s is not None and mine):
            timed_out = _out_of_time(store, mine[-1].id) if mine else 0
            more = (f"; campaign {mine[-1].id} stopped {timed_out} of its cells out of time: `--resume --max-time T` "
                    "gives them more" if timed_out else "")
            raise CampaignError(f"{study.name}: no unfinished {kind.noun} to resume in {store.path}{more}")
        campaign = (unfinished or mine)[-1]
    else:
        campaign = store.campaign(campaign_id)
    if campaign.study != study.name:
        raise CampaignError(f"campaign {campaign.id} is of study {campaign.study}, not {study.name}")
    other = kinds.of(campaign)
    if other.name != kind.name:
        raise CampaignError(f"campaign {campaign.id} is a {other.noun}: `bridgebench {other.command} {study.argument} "
                            "--resume`")
    timed_out = _out_of_time(store, campaign.id)
    if campaign.state == "done" and max_time_s is None:
        more = (f"; {timed_out} of its cells stopped out of time: `--resume --max-time T` gives them more"
                if timed_out else "")
        raise CampaignError(f"campaign {campaign.id} is already complete{more}")
    require_unchanged(study, campaign, "start a new campaign (a resumed one must measure the same thing)")
    options = read(campaign).options
    if max_time_s is not None:
        if campaign.state == "done" and not timed_out:
            raise CampaignError(f"campaign {campaign.id} is complete and none of its cells stopped out of time: more "
                                "time would run nothing")
        options = raised(options, max_time_s, campaign.id)
    return campaign.id, options


def raised(options: Options, max_time_s: float, campaign_id: int) -> Options:
    """The options with the adaptive time cap raised to max_time_s, the old cap kept (earlier_max_time_s). The
    intervals do not change: a ratio is judged at the same look points whatever the time, and the confidence
    that makes all of them hold together (adaptive.stopping_confidence) counts every look up to the cap of
    process executions, so more time only lets more of those looks happen."""
    if not isinstance(options, TimingOptions):
        raise CampaignError(f"--max-time: campaign {campaign_id} is not a timing campaign; only those are resumed with "
                            "more time")
    old = options.max_time_s
    if options.until_ci is None or old is None:
        raise CampaignError(f"--max-time: campaign {campaign_id} has no adaptive budget, so no time cap to raise")
    if max_time_s <= old:
        raise CampaignError(f"--max-time {max_time_s:g} s: campaign {campaign_id} already had {old:g} s; give more")
    if max_time_s > MAX_TIMEOUT_S * 7:
        raise CampaignError(f"--max-time {max_time_s:g} s: expected at most a week")
    return replace(options, max_time_s=max_time_s, earlier_max_time_s=(*options.earlier_max_time_s, old))


def keep_options(store: Store, campaign_id: int, options: Options) -> None:
    """Store a resumed campaign's options where resuming changed them (a raised time cap): once its harness owns
    it and its mechanisms are verified, so that a resume refused on the way changes nothing."""
    if options != read(store.campaign(campaign_id)).options:
        store.set_options(campaign_id, asdict(options))


def _out_of_time(store: Store, campaign_id: int) -> int:
    """How many of the campaign's cells its adaptive budget last left out of time."""
    last = {(d["benchmark"], d["mechanism"]): d["state"] for d in store.decisions(campaign_id)}
    return sum(state == adaptive.OUT_OF_TIME for state in last.values())


def verify_builds(store: Store, campaign_id: int, builds: dict[str, BuildResult]) -> None:
    for stored in store.builds(campaign_id):
        now = builds.get(stored["mechanism"])
        if stored["available"] and (now is None or not now.built_as(stored["build_hash"])):
            raise CampaignError(f"mechanism {stored['mechanism']} is not built as it was when campaign "
                                f"{campaign_id} started; start a new campaign")


@dataclass
class Session:
    """The campaign a command is running, once it has one, and the lock that makes it its owner."""

    campaign_id: int | None = None
    owner: Lock | None = None

    def start(self, store: Store, kind: Kind, study: Study, options: Options, builds: dict[str, BuildResult],
              checked: list[CheckRow]) -> int:
        """Create the campaign and own it, as one step for every harness sharing the store."""
        with store.planning():
            self.campaign_id = create(store, kind, study, options, builds, checked)
            self.owner = store.claim(self.campaign_id)
        return self.campaign_id

    def resume(self, store: Store, kind: Kind, study: Study, campaign_id: int | None,
               max_time_s: float | None = None) -> Options:
        """Choose the campaign to resume and own it, as one step."""
        with store.planning():
            self.campaign_id, options = resumable(store, kind, study, campaign_id, max_time_s)
            self.owner = store.claim(self.campaign_id)
        return options


@contextmanager
def session() -> Iterator[Session]:
    """A command's campaign session: whatever happens in it, the campaign's lock is released at its end."""
    held = Session()
    try:
        yield held
    finally:
        if held.owner:
            held.owner.release()


def store_execution(store: Store, campaign_id: int, task: Task, run: Execution, machine: str | None = None
                    ) -> Execution | None:
    """Store one execution; returns what was stored, or None when another harness stored it first."""
    try:
        store.record_execution(campaign_id, task, run, machine)
    except AlreadyStored:
        return None
    except (OverflowError, ValueError) as e:  # a value the protocol's checks let through: that
        run = replace(run, status=PROTOCOL, detail=f"output cannot be stored: {e}"[:300], output=None)
        store.record_execution(campaign_id, task, run, machine)  # execution fails, the campaign goes on
    return run


def run_tasks(store: Store, campaign_id: int, tasks: list[Task], execute: Execute,
              on_execution: OnExecution | None = None, skip: Callable[[Task], bool] | None = None,
              machine: str | None = None) -> list[Task]:
    """Run tasks in order, committing each execution as soon as it ends; returns the tasks `skip` left out.
    `machine`: the machine running them, when it is not the campaign's own (a fleet worker)."""
    skipped = []
    for task in tasks:
        if skip and skip(task):
            skipped.append(task)
            continue
        stored = store_execution(store, campaign_id, task, execute(task), machine)
        if stored is not None and on_execution:
            on_execution(task, stored)
    return skipped


@contextmanager
def running(store: Store, campaign_id: int) -> Iterator[None]:
    """The run state around running a campaign: running, then done, or interrupted if anything (Ctrl-C
    included) ends the run early; the interrupt or error goes on up."""
    store.set_state(campaign_id, "running")
    try:
        yield
    except BaseException:
        store.set_state(campaign_id, "interrupted")
        raise
    store.set_state(campaign_id, "done")


def done_if_complete(store: Store, campaign_id: int) -> None:
    """A campaign whose executions are run by many harnesses (a fleet) is done when none is pending."""
    if store.pending_count(campaign_id) == 0:
        store.set_state(campaign_id, "done")


SHARED_CACHE_FROM_S = 60.0
"""A campaign whose time cap is at least this reads the shared cache beside the reference loop (shared_cache.py):
0.33–0.46 s a reading (methodology §13, "The shared cache"), under 1 % of such a campaign. Shorter and fixed
budgets (most tests') go without."""


def read_speed(store: Store, campaign_id: int, moment: str, options: Options | None = None) -> None:
    """The reference loop's speed on the CPU the lock-step blocks use, stored with the campaign
    (reference.py): the report sets it against the machine's calibration and other campaigns. With a time cap
    of SHARED_CACHE_FROM_S or more, how much of the shared cache was ours too."""
    cpu = lock_cpu()
    reading = reference.read(moment, cpu)
    budget = options.adaptive if options else None
    if budget and budget.max_time_s >= SHARED_CACHE_FROM_S:
        reading = replace(reading, shared_held=shared_cache.read(cpu).held)
    record_speed(store, campaign_id, store.campaign(campaign_id).machine, reading)


def record_speed(store: Store, campaign_id: int, machine: str, reading: reference.Reading) -> None:
    """Store a reading with the machine that took it (the store keeps the machine beside the reading)."""
    store.record_speed(campaign_id, machine, reading.taken, {k: v for k, v in asdict(reading).items()
                                                            if k != "machine"})


def run_pending(store: Store, kind: Kind, study: Study, campaign_id: int, options: Options,
                builds: dict[str, BuildResult], on_execution: OnExecution | None = None) -> None:
    """Run what is left of the plan (with an adaptive budget, round after round until the cells settle),
    between two readings of the machine's speed. On Ctrl-C (a reading's included) the execution in flight is
    killed and discarded, the campaign is marked interrupted, and the interrupt goes on up (with no closing
    reading)."""
    with running(store, campaign_id):
        read_speed(store, campaign_id, "resume" if store.done_seqs(campaign_id) else "start", options)
        _run_pending(store, kind, study, campaign_id, options, builds, on_execution)
        read_speed(store, campaign_id, "end", options)


def _run_pending(store: Store, kind: Kind, study: Study, campaign_id: int, options: Options,
                 builds: dict[str, BuildResult], on_execution: OnExecution | None = None) -> None:
    with kind.executor(store, study, campaign_id, options, builds) as execute:
        budget = options.adaptive
        if budget is None:
            run_tasks(store, campaign_id, store.pending(campaign_id), execute, on_execution)
            # a fixed budget may replace what counted for nothing (campaign/replace.py), block after block
            while more := kind.replacements(store, study, campaign_id, options):
                store.add_planned(campaign_id, more)
                run_tasks(store, campaign_id, store.pending(campaign_id), execute, on_execution)
            return
        cells = list(dict.fromkeys((t.benchmark, t.mechanism) for t in store.planned(campaign_id)))
        adaptive.run(store, campaign_id, cells, budget,
                     lambda tasks, skip: run_tasks(store, campaign_id, tasks, execute, on_execution, skip),
                     baseline=study.baseline, judge=kind.judge(store, campaign_id, options))
