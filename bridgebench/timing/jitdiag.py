"""What LuaJIT's trace compiler did in each process execution, and whether a cell's speed modes follow it.

The Lua probe (probes/lua/probe.lua), on LuaJIT with its JIT on, attaches a handler to the compiler's trace
events and reports per execution: traces completed and aborted, the abort reasons in words, trace flushes,
the machine code of the traces alive at the end, and a *trace signature* (a hash of where each completed
trace started, sorted): executions whose compiler made the same traces share it. This module reads that
record back from an execution's stored info, and says how much of the spread between a cell's executions
the signatures account for: the share of the variance of the executions' log steady means that lies
between signature groups (η²), beside what a grouping drawn at random would account for on average,
(groups - 1)/(executions - 1). A descriptive figure, not a test: it says whether the fast and the slow
executions are the ones that compiled different traces. Where the executions fall into speed modes
(stats/spread.py), it also says how many of them the others with the same signature predict, leaving each
out in turn, so that a signature seen once predicts nothing.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field

from bridgebench.stats import spread

MIN_EXECUTIONS = 3  # fewer say nothing about modes


@dataclass(frozen=True)
class JitRecord:
    """One execution's record (the probe's "jit" field)."""

    traces: int
    aborts: int
    flushes: int
    mcode_bytes: int
    signature: str
    abort_reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class JitSummary:
    """A cell's executions' records, and how their speeds line up with their signatures."""

    executions: int  # with a record and a steady mean
    signatures: int  # distinct signatures among them
    traces_median: float
    aborts_median: float
    abort_reasons: dict[str, int]  # summed over the executions
    explained: float | None  # η²: the share of the spread of log steady means between signature groups
    chance: float | None  # what a random grouping into as many groups explains on average
    modes: int = 1  # speed modes among the executions (stats/spread.py)
    predicted: int | None = None  # executions whose mode the others with their signature predict; None: 1 mode

    def words(self) -> str:
        """The finding in a phrase."""
        return self._share_words() + self._mode_words()

    def _mode_words(self) -> str:
        if self.predicted is None:
            return ""
        if self.signatures == 1:
            return f"; {self.modes} speed modes, which one signature cannot tell apart"
        return (f"; {self.modes} speed modes, {self.predicted} of {self.executions} executions' modes predicted "
                "by the others with their signature")

    def _share_words(self) -> str:
        if self.explained is None or self.chance is None:
            if self.signatures == 1:
                return f"one trace signature in all {self.executions} executions: the spread is not the traces'"
            return (f"{self.signatures} signatures in {self.executions} executions, none repeated: too few "
                    "repeats to tell")
        return (f"{self.signatures} signatures in {self.executions} executions account for "
                f"{self.explained:.0%} of the spread between them (a random grouping: {self.chance:.0%})")


def record(info_json: str | None) -> JitRecord | None:
    """The JIT record an execution's probe reported, or None (PUC Lua, the JIT off, another probe, or a
    record that is not one)."""
    if not info_json:
        return None
    try:
        raw = json.loads(info_json).get("jit")
    except (ValueError, AttributeError):
        return None
    if not isinstance(raw, dict):
        return None
    numbers = [raw.get(k) for k in ("traces", "aborts", "flushes", "mcode_bytes")]
    reasons = raw.get("abort_reasons", {})
    if (not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers)
            or not isinstance(raw.get("signature"), str) or not isinstance(reasons, dict)
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in reasons.values())):
        return None
    traces, aborts, flushes, mcode = numbers
    return JitRecord(traces, aborts, flushes, mcode, raw["signature"][:16],
                     {str(k)[:200]: v for k, v in reasons.items()})


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def summarise(records: list[tuple[JitRecord, float]]) -> JitSummary | None:
    """Over (record, steady mean) pairs of one cell; None below MIN_EXECUTIONS."""
    if len(records) < MIN_EXECUTIONS:
        return None
    reasons: Counter[str] = Counter()
    for r, _ in records:
        reasons.update(r.abort_reasons)
    groups: dict[str, list[float]] = {}
    for r, mean in records:
        groups.setdefault(r.signature, []).append(math.log(mean))
    n, k = len(records), len(groups)
    explained = chance = None
    if 1 < k < n:  # some signature repeats, and there is more than one
        logs = [x for g in groups.values() for x in g]
        grand = sum(logs) / n
        total = sum((x - grand) ** 2 for x in logs)
        between = sum(len(g) * (sum(g) / len(g) - grand) ** 2 for g in groups.values())
        if total > 0:
            explained, chance = between / total, (k - 1) / (n - 1)
    prediction = spread.predicted_by([r.signature for r, _ in records], spread.modes([m for _, m in records]))
    return JitSummary(n, k, _median([r.traces for r, _ in records]), _median([r.aborts for r, _ in records]),
                      dict(reasons.most_common()), explained, chance,
                      prediction.modes if prediction else 1, prediction.predicted if prediction else None)


def top_reasons(reasons: dict[str, int], most: int = 3) -> str:
    return ", ".join(f"{why} ×{n}" for why, n in list(reasons.items())[:most]) or "none"
