"""The probe protocol (bridgebench/1): what a benchmark process prints after its timed loop.

One JSON object on the last non-empty line of stdout:
  {"protocol": "bridgebench/1", "times": [seconds per iteration...], "answer": "...",
   "batch": K (calls per iteration, default 1), "counters": {"name": [one value per iteration]},
   "vm": "...", "clock": "...", ...}
Anything else is a protocol violation, recorded with the reason.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

PROTOCOL = "bridgebench/1"
MAX_ANSWER = 4096


class ProtocolError(ValueError):
    pass


@dataclass(frozen=True)
class ProbeOutput:
    times: list[float]
    answer: str
    batch: int = 1
    counters: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def parse(stdout: str, iterations: int) -> ProbeOutput:
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        raise ProtocolError("printed nothing on stdout")
    last = lines[-1].strip()
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        raise ProtocolError(f"last line of stdout is not JSON: {last[:80]!r}") from None
    if not isinstance(data, dict):
        raise ProtocolError("last line of stdout is JSON but not an object")
    if data.get("protocol") != PROTOCOL:
        raise ProtocolError(f"expected protocol {PROTOCOL!r}, got {data.get('protocol')!r}")

    times = data.get("times")
    if not isinstance(times, list) or len(times) != iterations:
        got = len(times) if isinstance(times, list) else type(times).__name__
        raise ProtocolError(f"expected 'times' with {iterations} values, got {got}")
    if not all(_finite(t) and t >= 0 for t in times):
        raise ProtocolError("'times' holds a value that is not a finite non-negative number")

    answer = data.get("answer")
    if not isinstance(answer, str):
        raise ProtocolError("'answer' must be a string")
    if len(answer) > MAX_ANSWER:
        raise ProtocolError(f"'answer' is longer than {MAX_ANSWER} characters")

    batch = data.get("batch", 1)
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ProtocolError("'batch' must be a positive integer")

    counters = data.get("counters", {})
    if not isinstance(counters, dict):
        raise ProtocolError("'counters' must be an object")
    for name, values in counters.items():
        if not isinstance(values, list) or len(values) != iterations or not all(_finite(v) for v in values):
            raise ProtocolError(f"counter {name!r} must hold {iterations} finite numbers")

    info = {k: v for k, v in data.items() if k not in ("protocol", "times", "answer", "batch", "counters")}
    return ProbeOutput([float(t) for t in times], answer, batch, {k: [float(v) for v in vs] for k, vs in
                                                                   counters.items()}, info)
