"""A server's own count of what it served, held against what the driver saw (a study's [load] `totals`).

The server answers GET `totals` with JSON: {"counts": {GROUP: {KEY: n}} or null (it counts nothing),
"lost": {WHY: n}} (what it knows it lost). The driver reports, over the whole run, what it wrote and what
was answered, by request variant and by status. A count can be short of the answers (the server lost it)
or above them, but by no more than the requests still in flight when the run ended (written, never
answered): anything beyond that is counted twice. Groups: `status` is checked key by key against the
answers' statuses, `path` key by key against the answers of the variants with that path (a server that
counts must count these two: one missing has lost all of its counts), and any other group (`client`,
say) by its sum against all answers."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

TIMEOUT_S = 10.0
SETTLE_BOUND_S = 15.0  # how long a server's counts may keep catching up after a run before a shortfall is a loss


class TotalsError(Exception):
    """The server's totals could not be read; one line."""


@dataclass(frozen=True)
class Totals:
    """What a server counted against what the driver saw: `lost` answers missing from its counts (the worst
    group), `over` counts beyond answers plus in flight; `server_lost` what the server says it lost."""

    answered: int
    in_flight: int
    counted: dict[str, int]  # group -> sum of its counts
    lost: int
    over: int
    server_lost: dict[str, int]

    @property
    def exact(self) -> bool:
        return self.lost == 0 and self.over == 0

    def describe(self) -> str:
        counted = ", ".join(f"{g} {n}" for g, n in sorted(self.counted.items()))
        own = ", ".join(f"{k} {v}" for k, v in sorted(self.server_lost.items()) if v)
        return (f"{self.answered} answered, counted {counted}; lost {self.lost}, over {self.over}"
                + (f"; the server reports {own}" if own else ""))

    def to_json(self) -> dict[str, Any]:
        return {"answered": self.answered, "in_flight": self.in_flight, "counted": self.counted, "lost": self.lost,
                "over": self.over, "server_lost": self.server_lost}


def fetch(port: int, path: str) -> dict[str, Any]:
    """The server's totals document."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        body = answer.read()
    except (OSError, http.client.HTTPException) as e:
        raise TotalsError(f"GET {path}: {e}") from e
    finally:
        conn.close()
    if answer.status != 200:
        raise TotalsError(f"GET {path}: status {answer.status}: {body[:200].decode(errors='replace')}")
    try:
        doc = json.loads(body)
    except ValueError as e:
        raise TotalsError(f"GET {path}: not JSON: {body[:120]!r}") from e
    counts = doc.get("counts") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not (counts is None or (isinstance(counts, dict) and all(
            isinstance(g, dict) and all(isinstance(n, int | float) for n in g.values()) for g in counts.values()))):
        raise TotalsError(f"GET {path}: expected {{\"counts\": {{group: {{key: n}}}} or null, \"lost\": {{}}}}")
    return doc


def settled(port: int, path: str, settle_s: float, judge: Callable[[dict[str, Any]], Totals | None],
            bound_s: float = SETTLE_BOUND_S) -> Totals | None:
    """The server's totals, judged, `settle_s` after a run; while they fall short and still grow between two
    reads, asked again every `settle_s` (at least 0.1 s), up to `bound_s`. A collector or a log buffer that
    lags behind is waited for; a count that stays short is lost. TotalsError when they cannot be read."""
    deadline = time.monotonic() + bound_s
    previous: Totals | None = None
    while True:
        time.sleep(settle_s if previous is None else max(settle_s, 0.1))
        got = judge(fetch(port, path))
        if (got is None or got.lost == 0 or (previous is not None and got.counted == previous.counted)
                or time.monotonic() >= deadline):
            return got
        previous = got


def _path(url_path: str) -> str:
    return urlsplit(url_path).path


def compare(doc: dict[str, Any], *, answered_variants: dict[str, int], attempted_variants: dict[str, int],
            answered_statuses: dict[str, int], variant_paths: dict[str, str]) -> Totals | None:
    """The server's counts (a fetched document) against the driver's; None when the server counts nothing."""
    counts = doc.get("counts")
    if counts is None:
        return None
    answered = sum(answered_variants.values())
    in_flight = max(0, sum(attempted_variants.values()) - answered)
    by_path: dict[str, int] = {}
    for name, n in answered_variants.items():
        key = _path(variant_paths[name])
        by_path[key] = by_path.get(key, 0) + n
    expected = {"status": answered_statuses, "path": by_path}
    lost = over = 0
    summed = {}
    for group, keys in counts.items():
        got = {str(k): int(v) for k, v in keys.items()}
        summed[group] = sum(got.values())
        want = expected.get(group, {"*": answered})
        if group not in expected:
            got = {"*": summed[group]}
        short = sum(max(0, n - got.get(k, 0)) for k, n in want.items())
        extra = sum(max(0, n - want.get(k, 0)) for k, n in got.items())
        lost, over = max(lost, short), max(over, extra - in_flight)
    for group in expected:  # a group the server should count and does not: everything in it is lost
        if group not in counts:
            lost = max(lost, answered)
    own = doc.get("lost") or {}
    return Totals(answered, in_flight, summed, lost, max(0, over),
                  {str(k): int(v) for k, v in own.items()} if isinstance(own, dict) else {})
