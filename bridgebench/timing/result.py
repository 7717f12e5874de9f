"""The analysis of a campaign as one typed value: everything a report, an export or a diff shows, computed
once (analysis.py), cached in the store as JSON, and only read by the renderers.

Per-iteration times are not part of it (a campaign holds millions): a renderer that draws or exports them
reads them through analysis.Series, which applies the same per-call rule and the same steady mask as the
analysis did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridgebench.instructions import SECONDS
from bridgebench.result import (
    AdaptiveSummary,
    BuiltMechanism,
    CampaignFacts,
    CellDecision,
    CheckAnswer,
    Failure,
    decode,
    encode,
)
from bridgebench.stats import Estimate, Spread
from bridgebench.stats.executions import each_look
from bridgebench.timing.jitdiag import JitRecord, JitSummary

RESULT_VERSION = 24  # bump when a field changes meaning; a cached result of another version is recomputed
FAILED = "failed"  # the class a failed process execution counts in when classes are compared


@dataclass(frozen=True)
class SegmentMean:
    """Iterations [start, end) between two changepoints; mean of its non-outlier iterations, per call."""

    start: int
    end: int
    mean: float
    steady: bool


@dataclass(frozen=True)
class Run:
    """One successful process execution as the analysis saw it."""

    execution_id: int
    pexec: int
    iterations: int
    batch: int  # calls per iteration: stored times are divided by it (analysis.per_call)
    kind: str | None  # flat, warmup, slowdown, no steady state; None when too short to classify
    disturbed: str | None  # why the audit flagged the machine, or None
    stolen_iterations: int | None  # iterations that lost over 10% of their time to others (None: no CPU clock)
    steady_iteration: int | None  # 1-based, as warmup_stats counts
    steady_start: int | None  # 0-based first iteration of the steady state
    changepoints: tuple[int, ...]
    segments: tuple[SegmentMean, ...]
    steady_ranges: tuple[tuple[int, int], ...]  # [start, end) that count as steady; all of it when unclassified
    outliers: tuple[int, ...]  # 0-based indices
    steady_mean: float | None  # mean of the steady iterations without outliers, per call
    counters: dict[str, float]  # per counter reported per iteration: its mean over the same iterations
    machine: str = ""  # the machine that ran it
    jit: JitRecord | None = None  # what LuaJIT's trace compiler did in it (jitdiag.py), where the probe says
    block: str | None = None  # the lock-step block it ran in (lockstep.py), None: it ran alone
    turn: int = 1  # in a block, the iterations of each of its turns (round r: [lead + r·turn, lead + (r+1)·turn))
    lead: int = 0  # in a block, the iterations it made before the first round (unpaired)
    threads: int = 1  # in a block, the most threads its processes had: they shared the block's one CPU
    processes: int = 1  # in a block, the most processes it had
    round_s: float | None = None  # in a block, the median round's wall time (every member's turn, once)
    together: bool = False  # in a block, it took its turns at the same time as another member (twins, together)
    interleaved: bool = False  # in a block, it took its turns one iteration each with another member's (interleaved)
    twin_times: tuple[float, ...] = ()  # a solo twin (the baseline, lockstep.py): its turns beside its twin, in
    #   order, round r at [r·turn, (r+1)·turn); its iterations are its lead and its turns alone
    first_ratio: float | None = None  # unclassified (too short for changepoints): its first iteration over the
    #   median of the others, a warm-up the budget could not separate when well above 1

    def steady_mask(self) -> np.ndarray:
        """True for the iterations the analysis counts: inside a steady range and not an outlier."""
        mask = np.zeros(self.iterations, dtype=bool)
        for start, end in self.steady_ranges:
            mask[start:end] = True
        mask[list(self.outliers)] = False
        return mask

    def outlier_mask(self) -> np.ndarray:
        mask = np.zeros(self.iterations, dtype=bool)
        mask[list(self.outliers)] = True
        return mask


@dataclass(frozen=True)
class MachineCell:
    """One machine's share of a cell, summarised by the same rules as the whole cell."""

    machine: str
    executions: int
    classification: str | None
    class_counts: dict[str, int]
    steady_performance: Estimate | None


@dataclass(frozen=True)
class Cell:
    """One benchmark × mechanism."""

    benchmark: str
    mechanism: str
    executions_ok: int
    failures: tuple[Failure, ...]
    peak_rss_kb: float | None
    disturbed: int  # executions the audit flagged, failed ones included
    excluded_disturbed: int  # good executions left out because they were disturbed
    counters: dict[str, float] = field(default_factory=dict)
    setup_s: float | None = None
    classification: str | None = None
    class_counts: dict[str, int] = field(default_factory=dict)
    steady_iteration: Spread | None = None
    steady_seconds: Spread | None = None
    steady_performance: Estimate | None = None  # over process executions; no interval below 3 of them
    method: str | None = None
    per_execution: tuple[Run, ...] = ()
    ratio: Estimate | None = None  # to the baseline mechanism
    # In lock-step blocks: the sd of the rounds' log ratios within blocks (what taking turns leaves of the
    # machine's steps; each block's variance counted once, stats.lockstep.spread) and of the blocks' mean log
    # ratios between them (what processes differ by).
    ratio_within_sd: float | None = None
    ratio_between_sd: float | None = None
    # In lock-step blocks: the share of the variance between blocks that the noise within them accounts for
    # (stats.lockstep.spread): near 1 that noise (the host's, the benchmark's own) sets the interval's width,
    # near 0 the processes' own differences do.
    ratio_within_share: float | None = None
    # In lock-step blocks: the lengths of the turns (iterations) the baseline and this mechanism took, each pair
    # that occurred. A turn's first iteration follows the block's other processes on the CPU, so where the two
    # differ the ratio weighs those first iterations differently on its two sides (methodology §13).
    ratio_turns: tuple[tuple[int, int], ...] = ()
    # The same in the blocks after the campaign's first ones (a budget's later blocks, whose turns turn_s sizes
    # by time where the first ones go by iterations).
    ratio_later_turns: tuple[tuple[int, int], ...] = ()
    # In lock-step blocks: what a round lasted, the median over the ratio's blocks (the harness's clock). Speed
    # steps shorter than a round fall on one side of the ratio only.
    ratio_round_s: float | None = None
    adaptive: CellDecision | None = None
    machines: tuple[MachineCell, ...] = ()  # when more than one machine ran the cell's executions
    machines_verdict: str | None = None  # "consistent" or "distinguishable", with machines
    machines_reason: str = ""
    steady_bootstrap: Estimate | None = None  # warmup_stats's bootstrap within processes: a secondary figure
    jit: JitSummary | None = None  # the executions' JIT records, and how their speeds follow the signatures
    execution_s: float | None = None  # what its next execution would cost (analysis._execution_s)
    # later_steady budgets: its first executions' first L steady iterations over their others (stats.drift)
    steady_drift: Estimate | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.benchmark, self.mechanism

    def class_counts_with_failures(self) -> dict[str, int]:
        """Class counts with the failed executions as a class of their own (the differ compares these)."""
        counts = dict(self.class_counts)
        if self.failures:
            counts[FAILED] = counts.get(FAILED, 0) + len(self.failures)
        return counts


@dataclass(frozen=True)
class AuditSummary:
    """The campaign's disturbance audit in a few figures."""

    audited: int
    disturbed: int
    excluded: bool
    others_cores_median: float | None
    others_cores_max: float | None
    steal_cores_median: float | None
    steal_cores_max: float | None
    waited_s: float
    thresholds: dict[str, float]


@dataclass(frozen=True)
class Workload:
    """What one benchmark ran: its parameter (from the study file) and the mechanisms that ran it."""

    benchmark: str
    param: str
    mechanisms: tuple[str, ...]
    everyone: bool  # every available mechanism ran it (the benchmark leaves none out)


@dataclass(frozen=True)
class CountTimePair:
    """One cell's ratio to the baseline in instructions beside its ratio in time (time_beside_counts.py)."""

    benchmark: str
    mechanism: str
    count_ratio: float
    time_ratio: Estimate

    @property
    def quotient(self) -> float:
        """Count ratio over time ratio: 1 where counts and time agree."""
        return self.count_ratio / self.time_ratio.value


@dataclass(frozen=True)
class BesideTime:
    """A counted campaign's ratios set beside a timed campaign's (time_beside_counts.py says which one)."""

    campaign: int  # the timed campaign
    executions: int  # its executions stored when this was computed (with more, it is computed again)
    pairs: tuple[CountTimePair, ...]
    spearman: float | None  # rank correlation of count and time ratios over the pairs (None: under 3)

    def off(self) -> tuple[float, float] | None:
        """How far count/time lies from 1 (as a share), at the median pair and the farthest."""
        if not self.pairs:
            return None
        logs = sorted(abs(np.log(p.quotient)) for p in self.pairs)
        return float(np.expm1(logs[len(logs) // 2])), float(np.expm1(logs[-1]))

    def held(self) -> tuple[int, int]:
        """Pairs whose time ratio's interval holds the count ratio, of those with an interval."""
        with_interval = [p for p in self.pairs if p.time_ratio.has_interval]
        return sum(p.time_ratio.holds(p.count_ratio) for p in with_interval), len(with_interval)


@dataclass(frozen=True)
class Projection:
    """What more time would decide on one benchmark whose ratios stopped out of time (more_time.py)."""

    benchmark: str
    state: str  # more_time's PROJECTED, OUT_OF_REACH or NOT_YET
    blocks: int | None = None  # the count of blocks that would decide all its ratios stopped out of time
    seconds: float | None = None  # more seconds of executions those would take
    why: str = ""  # why it has no projection (which ratios)
    # the same at the low and the high end of every ratio's spread interval; None where some ratio is out of reach
    blocks_low: int | None = None
    seconds_low: float | None = None
    blocks_high: int | None = None
    seconds_high: float | None = None


@dataclass(frozen=True)
class Analysis:
    campaign: CampaignFacts
    confidence: float
    seed: int
    baseline: str | None
    mechanisms: tuple[BuiltMechanism, ...]
    benchmarks: tuple[str, ...]
    check: tuple[CheckAnswer, ...]
    audit: AuditSummary
    adaptive: AdaptiveSummary | None
    cells: tuple[Cell, ...]
    geomean_ratio: dict[str, float]
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> what the machine said of itself
    workloads: tuple[Workload, ...] = ()
    headline: str | None = None  # the mechanism the study's question is about, against the baseline
    equivalence: float = 0.02  # a ratio within ±this of 1 answers "equivalent" (question.py)
    # Each interval is computed at 1 - (1 - confidence)/looks, so that it holds with `confidence` at whichever
    # of its budget's looks stopped it (analysis.interval_looks; 1: a budget that never stops on a verdict).
    looks: int = 1
    beside_time: BesideTime | None = None  # counted campaigns: the same cells' time ratios, where stored
    # an aimed budget's ratios stopped out of time: what more time would decide, nearest first (more_time.project)
    more_time: tuple[Projection, ...] = ()
    version: int = RESULT_VERSION

    @property
    def metric(self) -> str:
        """What the iterations measure: seconds, or instructions (instructions.py); a campaign stored before
        there were two is timed."""
        return str(self.campaign.options.get("metric", SECONDS))

    @property
    def interval_confidence(self) -> float:
        """The confidence each interval is computed at."""
        return each_look(self.confidence, self.looks)

    def cell(self, benchmark: str, mechanism: str) -> Cell | None:
        return next((c for c in self.cells if c.key == (benchmark, mechanism)), None)

    @property
    def labels(self) -> dict[str, str]:
        """Mechanism -> its label from the study file."""
        return {m.mechanism: m.label or m.mechanism for m in self.mechanisms}

    def label(self, mechanism: str | None) -> str:
        return self.labels.get(mechanism or "", mechanism or "")

    def failures(self) -> list[Failure]:
        return [f for c in self.cells for f in c.failures]

    def to_json(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Analysis:
        """The result written by to_json(); ValueError when it was written by another version."""
        if not isinstance(data, dict) or data.get("version") != RESULT_VERSION:
            raise ValueError(f"analysis result of version {data.get('version') if isinstance(data, dict) else '?'}, "
                             f"expected {RESULT_VERSION}")
        return decode(cls, data)
