"""What every kind's result shares: the facts of the campaign and its builds, the answer check, failed
executions, the adaptive budget's decisions, the JSON coding driven by type hints, and the cache in the store
that every kind's analysis is read through (cached). Each kind's result type is its own: timing/result.py,
loadtest/result.py."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from bridgebench.options import AdaptiveBudget, look_points
from bridgebench.reference import Reading, calibrated, elsewhere
from bridgebench.store import Store


@dataclass(frozen=True)
class Failure:
    """A process execution that did not count: crashed, timed out, broke the protocol, or gave an answer
    other than the majority's."""

    pexec: int
    status: str
    detail: str
    stderr_tail: str


# A cell's states under an adaptive budget: campaign/adaptive.py decides them, the reports read them.
OPEN, SETTLED, CAPPED, FAILING, OUT_OF_TIME = "open", "settled", "capped", "failing", "out of time"


@dataclass(frozen=True)
class CellDecision:
    """An adaptive budget's last verdict on a cell (its state: one of the above)."""

    state: str
    reason: str
    round: int
    half_width: float | None


@dataclass(frozen=True)
class BuiltMechanism:
    """A mechanism as the campaign built it (its label, whether it was available and why not, its version)."""
    mechanism: str
    label: str
    available: bool
    reason: str
    version: str
    build_hash: str


@dataclass(frozen=True)
class CheckAnswer:
    benchmark: str
    mechanism: str
    status: str
    answer: str | None
    detail: str
    batch: int | None
    iterations: int | None = None  # sized to the budget's time per execution (None: the budget's iterations)
    stepped: bool | None = None  # its probe speaks the stepped mode, so it can run in lock-step blocks


@dataclass(frozen=True)
class CampaignFacts:
    id: int
    study: str
    state: str
    created: float
    finished: float | None
    git_sha: str
    machine: str
    environment: dict[str, Any]
    options: dict[str, Any]
    executions_planned: int
    executions_stored: int
    speed: tuple[Reading, ...] = ()  # the reference loop's readings as it ran (reference.py), oldest first
    calibrated_s: float | None = None  # the same loop's iteration in the calibration it was judged with
    calibrated_at: float | None = None  # …and when that calibration was made
    calibrated_elsewhere: str | None = None  # …and on another boot or CPU than the campaign's (reference.py)

    @classmethod
    def of(cls, campaign: Any, planned: int, stored: int, store: Store | None = None) -> CampaignFacts:
        """The facts of a stored campaign (store.Campaign), its options as the campaign stored them; with its
        store, the machine's speed as the campaign ran beside the machine's calibration."""
        speed = tuple(Reading(**r) for r in store.speed_readings(campaign.id)) if store else ()
        # the calibration the campaign was judged with (options.calibrated), not a later one
        calibration = store.calibration(campaign.machine, campaign.created) if store and speed else None
        return cls(campaign.id, campaign.study, campaign.state, campaign.created, campaign.finished,
                   campaign.git_sha, campaign.machine, campaign.environment, campaign.config["options"],
                   planned, stored, speed, *calibrated(calibration), elsewhere(calibration, campaign.environment))


@dataclass(frozen=True)
class AdaptiveSummary:
    until_ci: float
    max_process_executions: int
    max_time_s: float
    first_process_executions: int
    rounds: int
    states: dict[str, int]
    until_decided: bool = False  # aimed at the question: a cell with a ratio settles when it is decided
    look_points: tuple[int, ...] = ()  # …judged only at these counts of executions (): after every round)
    decided_within: float | None = None  # …and, decided faster or slower, once its CI is within ±this
    earlier_max_time_s: tuple[float, ...] = ()  # the time caps it had before resumes raised it, oldest first


# --- JSON: dataclasses <-> plain data, driven by the type hints (every kind's result) -----------------------
def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(kind: Any, data: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return None if data is None else decode(options[0], data)
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in data)
        return tuple(decode(a, v) for a, v in zip(args, data, strict=True))
    if origin is dict:
        _, value_kind = typing.get_args(kind)
        return {k: decode(value_kind, v) for k, v in data.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: decode(hints[f.name], data[f.name]) for f in dataclasses.fields(kind)
                       if f.name in data})
    if kind is float and isinstance(data, int):
        return float(data)
    return data


class _Decided(Protocol):
    @property
    def key(self) -> tuple[str, str]: ...


D = TypeVar("D", bound=_Decided)


def with_decisions(store: Store, campaign_id: int, budget: AdaptiveBudget | None, cells: list[D]
                   ) -> tuple[list[D], AdaptiveSummary | None]:
    """With an adaptive budget: each cell's last verdict (its `adaptive` field), and the budget's settings and
    rounds. For a timing campaign's cells and a load campaign's alike."""
    if budget is None:
        return cells, None
    last = {(d["benchmark"], d["mechanism"]): d for d in store.decisions(campaign_id)}
    states: Counter[str] = Counter()
    out = []
    for cell in cells:
        d = last.get(cell.key)
        decision = CellDecision(d["state"], d["reason"], d["round"], d["half_width"]) if d else None
        states[d["state"] if d else "not judged"] += 1
        out.append(replace(cell, adaptive=decision))  # type: ignore[type-var]
    return out, AdaptiveSummary(budget.until_ci, budget.cap, budget.max_time_s, budget.first,
                                max((d["round"] for d in last.values()), default=-1) + 1, dict(states),
                                budget.until_decided,
                                look_points(budget.first, budget.cap, budget.growth) if budget.growth > 1 else (),
                                budget.within, budget.earlier_max_time_s)


class StoredResult(Protocol):
    def to_json(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=StoredResult)


def cached(store: Store, campaign_id: int, decode: Callable[[dict[str, Any]], R],
           compute: Callable[[R | None], R], fresh: Callable[[R], bool]) -> R:
    """A campaign's stored result, whatever its kind: decoded from the store, or computed (and stored) when
    there is none, it was written by another version (decode raises ValueError), or it is not fresh.
    compute gets the stale result, if any, to carry over what must not change (a bootstrap's seed)."""
    stored = store.analysis(campaign_id)
    result = None
    if stored is not None:
        try:
            result = decode(stored)
        except (ValueError, KeyError, TypeError):
            result = None
    if result is None or not fresh(result):
        result = compute(result)
        store.save_analysis(campaign_id, result.to_json())
    return result
