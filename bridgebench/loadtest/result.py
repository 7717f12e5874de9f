"""The analysis of a load campaign as one typed value, built of the same parts as a timing campaign's
(result.py: the campaign's facts, its mechanisms, the answer check, failures, estimates over process
executions), cached in the store as JSON the same way and only read by the renderers (loadtest/report.py).

What differs is what one process execution produced: a timing execution gives iterations, a load run gives
an achieved rate and latency percentiles (LoadRun), and a cell is a phase × server instead of a benchmark ×
mechanism."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
from bridgebench.stats import Estimate

LOAD_RESULT_VERSION = 4  # bump when a field changes meaning; a cached result of another version is recomputed


@dataclass(frozen=True)
class LoadRun:
    """One successful load run (one process execution of the server) as the analysis saw it."""

    execution_id: int
    pexec: int
    intended_rate: float | None  # requests a second due; None for a closed-loop run
    achieved_rate: float
    latency: dict[str, float]  # percentile -> seconds, from each request's intended send time
    sent: int
    completed: int
    censored: int
    disturbed: str | None  # why the audit flagged the machine, or None
    server_us: float | None = None  # the server's CPU per answered request, µs (warm-up included)
    lost: int | None = None  # answers missing from the server's own totals (None: it counts nothing)


@dataclass(frozen=True)
class Prediction:
    """Latency of a run aimed above saturation, from throughput alone. The server answers X requests a
    second (its saturation) while R a second are due: the request due at t (from the run's start) is
    answered at t·R/X, so its latency is t(R/X - 1); one still unanswered when the run ends at T is
    recorded at T - t (censored). Recorded are the requests due in [W, T] (W: the warm-up).
    `formula_*`: the seed's formula for completed requests only, from t = 0: (T/2)(1 - X/R), T(1 - X/R)."""

    intended_rate: float
    saturation_rate: float
    run_s: float
    warmup_s: float
    p50_s: float
    max_s: float
    formula_p50_s: float
    formula_max_s: float


@dataclass(frozen=True)
class LoadCell:
    """One phase × server: its runs, and their figures over process executions and over every request."""

    phase: str
    mechanism: str
    fraction: float | None  # of saturation; None for the saturation phase
    planned: int
    ok: int
    failures: tuple[Failure, ...]
    disturbed: tuple[str, ...]  # one line per disturbed run
    intended_rate: float | None
    achieved: Estimate | None  # mean over process executions; no interval below 3 of them
    latency: dict[str, Estimate]  # percentile -> mean over process executions
    merged: dict[str, float]  # over every request of every run (histograms merged)
    service: dict[str, float]
    lag: dict[str, float]
    sent: int
    completed: int
    censored: int
    errors: dict[str, int]
    statuses: dict[str, int]
    distribution: tuple[tuple[float, float], ...]  # merged latency: (percentile, seconds)
    per_execution: tuple[LoadRun, ...] = ()
    prediction: Prediction | None = None
    server_us: Estimate | None = None  # the server's CPU per answered request, µs, over process executions
    # The server's own totals against the driver's answers (loadtest/totals.py), summed over the runs: answers
    # missing from its counts (None: it counts nothing), and what it says it lost, by why.
    lost: int | None = None
    server_lost: dict[str, int] = field(default_factory=dict)
    totals_errors: tuple[str, ...] = ()
    # Against the driver: the achieved rate over the ceiling server's saturation rate, and whether this is
    # within LIMITED_BY_DRIVER of it (the driver, not the server, may be what stops it); and whether the
    # server's CPUs include the driver's (both then share cores: the figure measures the two together).
    ceiling_share: float | None = None
    driver_limited: bool = False
    contended: bool = False
    adaptive: CellDecision | None = None  # an adaptive budget's last verdict on the cell (`load --until`)

    @property
    def key(self) -> tuple[str, str]:
        return self.phase, self.mechanism


@dataclass(frozen=True)
class ServerRatio:
    """Server a's figure over server b's (the saturation rate, or the CPU per request), over process
    executions (Welch's t on the logs)."""

    a: str
    b: str
    ratio: Estimate


@dataclass(frozen=True)
class RequestMix:
    name: str
    weight: int
    method: str
    path: str
    expect_status: int


@dataclass(frozen=True)
class LoadSetup:
    """The study's [load] table as the campaign ran it."""

    connections: int
    fractions: tuple[float, ...]
    overload: float | None
    driver_cpus: str | None
    requests: tuple[RequestMix, ...]


@dataclass(frozen=True)
class LoadAnalysis:
    campaign: CampaignFacts
    confidence: float
    baseline: str | None  # the server the others are compared with (the study's baseline, else the first)
    mechanisms: tuple[BuiltMechanism, ...]
    check: tuple[CheckAnswer, ...]
    setup: LoadSetup
    phases: tuple[str, ...]
    cells: tuple[LoadCell, ...]
    ratios: tuple[ServerRatio, ...] = ()
    equivalence: float = 0.02  # a ratio within ±this of 1 answers "equivalent" (question.py)
    ceiling: str | None = None  # the server that measures the driver's ceiling (not compared with the others)
    ceiling_rate: Estimate | None = None  # its saturation rate
    min_runs: int = 5  # process executions a figure needs for an interval
    # The server's CPU per request against the baseline's, at the lightest constant rate (where the
    # driver is furthest from its ceiling): what each way of working costs a request, throughput aside.
    cpu_phase: str | None = None
    cpu_ratios: tuple[ServerRatio, ...] = ()
    adaptive: AdaptiveSummary | None = None  # `load --until ci=…`: its settings, rounds and how cells ended
    version: int = LOAD_RESULT_VERSION

    def cell(self, phase: str, mechanism: str) -> LoadCell | None:
        return next((c for c in self.cells if c.key == (phase, mechanism)), None)

    def label(self, mechanism: str) -> str:
        return next((m.label or m.mechanism for m in self.mechanisms if m.mechanism == mechanism), mechanism)

    @property
    def failed(self) -> int:
        return sum(len(c.failures) for c in self.cells)

    @property
    def disturbed(self) -> int:
        return sum(len(c.disturbed) for c in self.cells)

    def to_json(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoadAnalysis:
        """The result written by to_json(); ValueError when it was written by another version."""
        if not isinstance(data, dict) or data.get("version") != LOAD_RESULT_VERSION or "setup" not in data:
            raise ValueError(f"load analysis of version {data.get('version') if isinstance(data, dict) else '?'}, "
                             f"expected {LOAD_RESULT_VERSION}")
        return decode(cls, data)
