"""Whether a steady state holds still. A budget whose later executions are short (later_steady: the warm-up
and L more iterations) reads a cell's steady state from the L iterations right after its warm-up. Where the
steady iterations go on speeding up or slowing down past the classified warm-up (LuaJIT's havlak), that reading
differs from a longer execution's, and a ratio with the cell on one side depends on how long its processes ran.
The first executions, which run long, show it: their first L steady iterations against the rest."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bridgebench.stats.bootstrap import Estimate
from bridgebench.stats.executions import over_executions


def factors(steady: Sequence[np.ndarray], later: int) -> list[float]:
    """Per execution whose steady iterations (`steady`, each in order) number at least 2·`later`: the mean of the
    first `later` over the mean of the rest."""
    if later < 1:
        raise ValueError(f"later must be at least 1, got {later}")
    return [float(s[:later].mean() / s[later:].mean()) for s in (np.asarray(x, dtype=float) for x in steady)
            if len(s) >= 2 * later]


def steady_drift(steady: Sequence[np.ndarray], later: int, *, confidence: float = 0.99) -> Estimate | None:
    """The factors' geometric mean with its Student-t interval over executions (from 3 of them, else no interval);
    None when no execution has 2·`later` steady iterations."""
    found = factors(steady, later)
    return over_executions(found, confidence=confidence, scale="log") if found else None


def moves(drift: Estimate | None, margin: float) -> bool:
    """Whether the drift is shown to exceed ±margin: its whole interval beyond it, one side or the other."""
    if drift is None or not drift.has_interval or drift.low is None or drift.high is None:
        return False
    return drift.low > 1 + margin or drift.high < 1 - margin
