"""What a campaign was started with, as one typed value: its kind, the study file as parsed, and the kind's
options. A campaign stores this as JSON when it starts; `read` turns it back into the same value, once, for
every part that needs it (resume, the fleet's workers, the analysis, `list`)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from bridgebench.instructions import SECONDS
from bridgebench.stats.classify import DEFAULT_DELTA_RELATIVE
from bridgebench.store import Campaign
from bridgebench.study import SEPARATE, TOGETHER, TWINS

TIMING = "timing"  # iterations of wall time per process execution (a campaign stored without a kind is one)
LOAD = "load"  # a server per process execution under a constant-rate load


@dataclass(frozen=True)
class AdaptiveBudget:
    """More process executions, round after round, for the cells whose verdict is still open (adaptive.py)."""

    first: int  # process executions every cell gets before the rounds
    until_ci: float  # a cell settles when its CI half-width is at most this share of its estimate…
    cap: int  # …or it has this many process executions
    max_time_s: float  # machine time of all the executions together
    randomise: bool
    seed: int
    # Aimed at the study's question (question.py): a cell with a ratio to the baseline settles when that ratio
    # is decided, the baseline when every ratio of its benchmark has stopped; until_ci is for cells with none.
    until_decided: bool = False
    growth: float = 1.0  # when a ratio is judged (look_points): 1, after every round
    within: float | None = None  # a ratio decided faster or slower settles once its CI is within ±this too
    nearest_first: bool = False  # when the time left cannot decide every ratio, the nearest get blocks first
    earlier_max_time_s: tuple[float, ...] = ()  # the caps it had before resumes raised it, oldest first

    @property
    def looks(self) -> int:
        return looks(self.first, self.cap, self.growth)

    def is_look(self, executions: int) -> bool:
        return executions >= self.cap or executions in look_points(self.first, self.cap, self.growth)

    def next_look(self, executions: int) -> int:
        return min(p for p in look_points(self.first, self.cap, self.growth) if p > executions)


def look_points(first: int, cap: int, growth: float = 1.0) -> tuple[int, ...]:
    """The counts of process executions at which a cell's ratio is judged: its first executions, then each
    time the count has grown by `growth` (at least one more), and the cap. Growth 1 judges after every round;
    1.5 judges at 3, 5, 8, 12, 18, 27, 41… : fewer looks, so each interval is narrower at the same overall
    confidence, while a cell still stops soon after it could (adaptive.py)."""
    points = [first]
    while points[-1] < cap:
        points.append(min(cap, max(points[-1] + 1, math.ceil(points[-1] * growth))))
    return tuple(points)


def looks(first: int, cap: int, growth: float = 1.0) -> int:
    """How many times a cell's ratio can be judged: at its look points, and, when those skip rounds, once more
    at whatever count the campaign's time cap stops it (the report judges it there)."""
    return len(look_points(first, cap, growth)) + (growth > 1.0 and cap > first)


# δ by execution length: (an execution's seconds, the δ calibrated at that length, whether that δ reached the
# calibration's share of flat executions), shortest first, δ never smaller for a longer length (calibrate.py;
# methodology §3).
DeltaTable = tuple[tuple[float, float, bool], ...]


def delta_table(calibration: dict[str, Any]) -> DeltaTable:
    """A stored calibration's δ by length. A longer execution meets at least the machine's steps a shorter one
    does, so each length's δ is raised to the largest of the shorter ones' (their measured δ can dip below by
    chance), and is not reached where a shorter one's was not. A calibration stored before lengths existed is
    one length."""
    lengths = sorted((float(c["iterations"]) * float(c["iteration_ms"]) / 1e3, float(c["delta_relative"]),
                      bool(c.get("reached", True)))
                     for c in calibration.get("lengths") or [calibration] if "iteration_ms" in c)
    table, largest, reached = [], 0.0, True
    for seconds, delta, ok in lengths:
        largest, reached = max(largest, delta), reached and ok
        table.append((seconds, largest, reached))
    return tuple(table)


def delta_for(seconds: float, table: DeltaTable, fallback: float) -> float:
    """The δ an execution of `seconds` is classified with: the one calibrated at the length nearest its own on
    a log scale (a tie takes the longer); `fallback` with no table."""
    if not table or seconds <= 0:
        return fallback
    return min(table, key=lambda entry: (abs(math.log(entry[0] / seconds)), -entry[0]))[1]


SEQUENTIAL, LOCKSTEP = "sequential", "lockstep"
PAIRINGS = (LOCKSTEP, SEQUENTIAL)
FIXED, DRAWN, SHARED = "fixed", "drawn", "shared"
LAYOUTS = (DRAWN, SHARED, FIXED)
CPU_TIMED = (TOGETHER, TWINS)  # turns taken at the same time as others, timed by CPU time on a shared CPU


@dataclass(frozen=True)
class TimingOptions:
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
    until_decided: bool = False  # adaptive, aimed at the study's question (AdaptiveBudget.until_decided)
    # Iterations sized per cell to about this long (None: `iterations` each), in the metric's analysed unit:
    # seconds, or billions of instructions (a budget's execution_ir, counting.ANALYSED_PER).
    execution_s: float | None = None
    min_iterations: int = 1  # …but at least this many (`iterations` is the most)
    # The warm-up classification's δ (methodology §3), fixed when the campaign is created: the machine's
    # calibrated one (calibrate.py), else the default. Stored, so the analysis never changes afterwards.
    delta_relative: float = DEFAULT_DELTA_RELATIVE
    delta_calibrated: str | None = None  # when the machine was calibrated (YYYY-MM-DD), None: the default
    delta_by_length: DeltaTable = ()  # calibrated by execution length (delta_for); () : delta_relative for all
    # What each iteration measures: wall time ("seconds"), or instructions counted under callgrind
    # ("instructions", instructions.py), with what the counts were taken under (instructions.pinning()).
    metric: str = SECONDS
    counting: dict[str, Any] | None = None
    count_sizes: bool = False  # each benchmark at its count_param (study.Benchmark.param_for)
    # How the executions of a benchmark's mechanisms are paired (methodology §12): SEQUENTIAL, one after the
    # other (rounds, RMIT blocks), or LOCKSTEP, live together on one CPU taking turns iteration by iteration.
    pairing: str = SEQUENTIAL
    # Where a probe's code and data land in memory: FIXED by the paths and environment, DRAWN per execution (a
    # random-length environment entry and, in the Lua probe, a random-length allocation), or SHARED: drawn per
    # lock-step block, the same for its members.
    layout: str = FIXED
    turns: str = SEPARATE  # how a lock-step block's members take their turns (study.TURNS, lockstep.run_block)
    # Separate turns in later blocks: each lasts about this long (lockstep.timed_turns); None: sized by iterations
    turn_s: float | None = None
    look_growth: float = 1.0  # adaptive, aimed at the question: when ratios are judged (look_points)
    decided_within: float | None = None  # adaptive: a decided ratio runs on until its CI is within ±this
    # The executions after a cell's first ones make this share of its iterations (None: all of them): once a
    # cell's warm-up is classified, blocks of shorter processes spend the time on what the intervals rest on,
    # the spread between processes (methodology §13).
    later_share: float | None = None
    # Or: they make as many iterations as their benchmark's first executions took to warm up (the longest
    # warm-up classified among them, summary.warmup_length), plus this many steady ones (None: all of them).
    # Only cells whose executions are classified; a block's ratio rests on how processes differ (methodology §9).
    later_steady: int | None = None
    nearest_first: bool = False  # adaptive, aimed at the question: campaign/nearest.py
    replace_dropped: bool = False  # fixed: blocks that count for no ratio are replaced (campaign/replace.py)
    # adaptive: the time caps it had before `run --resume --max-time` raised it, oldest first (engine.resumable)
    earlier_max_time_s: tuple[float, ...] = ()

    @property
    def cpu_timed(self) -> bool:
        """Whether its iterations are CPU times: lock-step turns taken at the same time as another's, on a shared
        CPU, and so every cell of it, one run alone too, on that one clock."""
        return self.pairing == LOCKSTEP and self.turns in CPU_TIMED

    def calibrated(self, calibration: dict[str, Any] | None) -> TimingOptions:
        """These options judged with the machine's calibration (the latest `bridgebench calibrate` stored).
        Counts do not drift as the machine's time does: an instructions campaign keeps the default δ."""
        if calibration is None or self.metric != SECONDS:
            return self
        when = time.strftime("%Y-%m-%d", time.gmtime(calibration["created"]))
        table = delta_table(calibration)
        shortest = table[0][1] if table else float(calibration["delta_relative"])
        return replace(self, delta_relative=shortest, delta_calibrated=when, delta_by_length=table)

    def delta_for(self, seconds: float) -> float:
        """The δ an execution that ran `seconds` is classified with."""
        return delta_for(seconds, self.delta_by_length, self.delta_relative)

    @property
    def adaptive(self) -> AdaptiveBudget | None:
        if self.until_ci is None:
            return None
        return AdaptiveBudget(self.process_executions, self.until_ci,
                              self.max_process_executions or self.process_executions, self.max_time_s or 0.0,
                              self.randomise, self.seed, self.until_decided, self.look_growth, self.decided_within,
                              self.nearest_first, self.earlier_max_time_s)

    @classmethod
    def from_stored(cls, stored: dict[str, Any]) -> TimingOptions:
        return cls(**{**stored, "benchmarks": tuple(stored["benchmarks"]), "mechanisms": tuple(stored["mechanisms"]),
                      "delta_by_length": tuple(tuple(e) for e in stored.get("delta_by_length", ())),
                      "earlier_max_time_s": tuple(stored.get("earlier_max_time_s", ()))})


@dataclass(frozen=True)
class LoadOptions:
    budget: str
    process_executions: int
    warmup_s: float
    duration_s: float
    mechanisms: tuple[str, ...]
    seed: int = 0
    # adaptive (`load --until ci=5%`): more runs for the cells whose achieved rate or server CPU per request
    # is not yet known to within until_ci, at most max_process_executions a cell, within max_time_s
    until_ci: float | None = None
    max_process_executions: int | None = None
    max_time_s: float | None = None

    @property
    def adaptive(self) -> AdaptiveBudget | None:
        if self.until_ci is None:
            return None  # a load campaign runs its plan as it was made
        return AdaptiveBudget(self.process_executions, self.until_ci,
                              self.max_process_executions or self.process_executions, self.max_time_s or 0.0,
                              False, self.seed)

    def calibrated(self, calibration: dict[str, Any] | None) -> LoadOptions:
        return self  # a load run has no iterations to classify

    @classmethod
    def from_stored(cls, stored: dict[str, Any]) -> LoadOptions:
        return cls(**{**stored, "mechanisms": tuple(stored["mechanisms"])})


Options = TimingOptions | LoadOptions
_OPTIONS: dict[str, type[TimingOptions] | type[LoadOptions]] = {TIMING: TimingOptions, LOAD: LoadOptions}


@dataclass(frozen=True)
class CampaignConfig:
    kind: str
    study: dict[str, Any]  # the study file as parsed when the campaign started
    options: Options

    @property
    def baseline(self) -> str | None:
        return self.study["study"].get("baseline")

    def param(self, benchmark: str) -> str:
        """The parameter a benchmark ran with, as the study file gave it: its count_param at the counted
        sizes, if it has one."""
        raw = self.study.get("benchmarks", {}).get(benchmark, {})
        counted = getattr(self.options, "count_sizes", False) and "count_param" in raw
        return str(raw.get("count_param" if counted else "param", ""))

    def to_stored(self) -> dict[str, Any]:
        # A timing campaign is stored without a kind, as it was before there were two.
        return ({"kind": self.kind} if self.kind != TIMING else {}) | {"study": self.study,
                                                                       "options": asdict(self.options)}


def read(campaign: Campaign) -> CampaignConfig:
    """The campaign's config as it stored it."""
    kind = campaign.config.get("kind", TIMING)
    return CampaignConfig(kind, campaign.config["study"], _OPTIONS[kind].from_stored(campaign.config["options"]))


def listed(campaign: Campaign) -> dict[str, Any]:
    """What `bridgebench list` says of a stored campaign."""
    return {"id": campaign.id, "study": campaign.study, "state": campaign.state, "created": campaign.created,
            "budget": read(campaign).options.budget, "machine": campaign.machine}
