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
# Limits checked before anything reaches the store: a probe is user code and may print anything.
MAX_ANSWER = 4096
MAX_BATCH = 10**12  # calls per iteration; far above any calibration, far below SQLite's 64-bit integers
MAX_SECONDS = 1e6  # one iteration longer than eleven days is not a measurement (the timeout caps at a day)
MAX_COUNTER = 1e18
MAX_COUNTERS = 64
MAX_INFO_BYTES = 64 * 1024


class ProtocolError(ValueError):
    pass


@dataclass(frozen=True)
class ProbeOutput:
    times: list[float]
    answer: str
    batch: int = 1
    counters: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


def _number(x: Any, limit: float) -> float | None:
    """x as a float if it is a JSON number of at most `limit` in size, else None. A 400-digit integer
    is a valid JSON number that no float holds."""
    if not isinstance(x, int | float) or isinstance(x, bool):
        return None
    try:
        value = float(x)
    except OverflowError:
        return None
    return value if math.isfinite(value) and abs(value) <= limit else None


def _numbers(values: Any, count: int, limit: float, what: str) -> list[float]:
    if not isinstance(values, list) or len(values) != count:
        got = len(values) if isinstance(values, list) else type(values).__name__
        raise ProtocolError(f"expected {what} with {count} values, got {got}")
    out = [_number(v, limit) for v in values]
    if any(v is None for v in out):
        raise ProtocolError(f"{what} holds a value that is not a number of at most {limit:g}")
    return out  # type: ignore[return-value]


def parse(stdout: str, iterations: int) -> ProbeOutput:
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        raise ProtocolError("printed nothing on stdout")
    last = lines[-1].strip()
    try:
        data = json.loads(last)
    except RecursionError:
        raise ProtocolError("last line of stdout is JSON nested too deep to read") from None
    except ValueError as e:  # not JSON, or an integer with more digits than Python converts
        raise ProtocolError(f"last line of stdout is not JSON ({str(e)[:80]}): {last[:80]!r}") from None
    if not isinstance(data, dict):
        raise ProtocolError("last line of stdout is JSON but not an object")
    if data.get("protocol") != PROTOCOL:
        raise ProtocolError(f"expected protocol {PROTOCOL!r}, got {str(data.get('protocol'))[:80]!r}")

    times = _numbers(data.get("times"), iterations, MAX_SECONDS, "'times'")
    if any(t < 0 for t in times):
        raise ProtocolError("'times' holds a value that is not a finite non-negative number")

    answer = data.get("answer")
    if not isinstance(answer, str):
        raise ProtocolError("'answer' must be a string")
    if len(answer) > MAX_ANSWER:
        raise ProtocolError(f"'answer' is longer than {MAX_ANSWER} characters")

    batch = data.get("batch", 1)
    if not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch <= MAX_BATCH:
        raise ProtocolError(f"'batch' must be an integer from 1 to {MAX_BATCH:.0e}")

    raw_counters = data.get("counters", {})
    if not isinstance(raw_counters, dict):
        raise ProtocolError("'counters' must be an object")
    if len(raw_counters) > MAX_COUNTERS:
        raise ProtocolError(f"more than {MAX_COUNTERS} counters")
    if "seconds" in raw_counters:
        raise ProtocolError("a counter may not be named 'seconds' (the store keeps the iteration times under it)")
    counters = {name[:100]: _numbers(values, iterations, MAX_COUNTER, f"counter {name[:40]!r}")
                for name, values in raw_counters.items()}

    info = {k: v for k, v in data.items() if k not in ("protocol", "times", "answer", "batch", "counters")}
    try:
        info_size = len(json.dumps(info))
    except (ValueError, RecursionError):
        raise ProtocolError("the probe's other fields cannot be stored as JSON") from None
    if info_size > MAX_INFO_BYTES:
        raise ProtocolError(f"the probe's other fields take more than {MAX_INFO_BYTES} bytes")
    if "setup_s" in info and _number(info["setup_s"], MAX_SECONDS) is None:
        raise ProtocolError(f"'setup_s' must be a number of at most {MAX_SECONDS:g} seconds")
    return ProbeOutput(times, answer, batch, counters, info)
