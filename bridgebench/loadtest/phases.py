"""The phases of a load campaign, and the rates they aim at: closed-loop saturation first, then each
constant rate at a fraction of the saturation its server reached (and, with `overload`, one above it)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from bridgebench.runner import OK
from bridgebench.store import StoredExecution
from bridgebench.study import Load

SATURATION = "saturation"


@dataclass(frozen=True)
class Phase:
    name: str
    fraction: float | None  # of the saturation rate; None: closed loop (the saturation phase itself)


def phases(load: Load) -> list[Phase]:
    out = [Phase(SATURATION, None)]
    out += [Phase(f"rate-{f * 100:g}%", f) for f in load.fractions]
    if load.overload:
        out.append(Phase(f"overload-{load.overload * 100:g}%", load.overload))
    return out


def saturation_rates(executions: list[StoredExecution], first: int | None = None) -> dict[str, list[float]]:
    """Per server, the requests/s each of its successful saturation runs reached (with `first`: only its
    first runs, those every cell gets before an adaptive budget's rounds)."""
    rates: dict[str, list[float]] = {}
    for e in executions:
        if first is not None and e.pexec >= first:
            continue
        if e.benchmark == SATURATION and e.status == OK and e.info_json:
            rates.setdefault(e.mechanism, []).append(json.loads(e.info_json)["achieved_rate"])
    return rates
