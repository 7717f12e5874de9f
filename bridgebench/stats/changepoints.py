"""Changepoints by PELT with the Gaussian mean-and-variance cost (R's ``changepoint::cpt.meanvar``).

Two backends give identical answers: a small C file compiled on first use and loaded through ctypes,
and a numpy reference used when no C compiler is available. Both evaluate the same floating-point
operations in the same order, including the logarithm (our own, from the exponent bits, a table and a
polynomial; libm's and numpy's differ in the last bit now and then), so they agree bit for bit. The C
search also sets aside, for a few steps at a time, the segment starts that provably cannot win (see
_pelt.c): on a series without changepoints, where PELT prunes nothing, that leaves about 1/36 of the
cost evaluations at 6250 points, and every prefix's optimal cost stays the same to the last bit.
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import subprocess
import threading
from pathlib import Path

import numpy as np

from bridgebench import native

__all__ = ["DEFAULT_PENALTY_FACTOR", "backend", "changepoints", "default_penalty"]

log = logging.getLogger(__name__)

DEFAULT_PENALTY_FACTOR = 15.0
"""The default penalty is 15·log(n), as warmup_stats passes to ``cpt.meanvar``."""

#: A segment's variance is never taken below (REL_STD_FLOOR · mean |x|)², nor below the variance of the
#: data's apparent quantisation step (q²/12, q the smallest gap between distinct values). Without a floor
#: a run of identical values would have cost -inf.
REL_STD_FLOOR = 1e-6

_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
_CELL_BITS = 0x000FF00000000000  # the mantissa's top 8 bits: 256 cells of [1, 2)
_HALF_CELL = 1 << 43
_CENTRES = 1.0 + (np.arange(256) + 0.5) / 256.0  # exact; the same numbers _pelt.c builds from the bits
_LOG_CENTRES = np.array([math.log(c) for c in _CENTRES])
_INV_CENTRES = 1.0 / _CENTRES
_TABLE = np.ascontiguousarray(np.column_stack([_LOG_CENTRES, _INV_CENTRES]).ravel())  # pairs, for C
_KCONST = math.log(2.0 * math.pi) + 1.0

_C_SOURCE = Path(__file__).with_name("_pelt.c")
_C_FLAGS = ("-O2", "-shared", "-fPIC", "-ffp-contract=off")


def default_penalty(n: int) -> float:
    """The penalty warmup_stats uses for a series of ``n`` points: 15·log(n)."""
    return DEFAULT_PENALTY_FACTOR * math.log(max(n, 1))


def changepoints(x: np.ndarray, penalty: float | None = None, min_size: int = 2,
                 quantum: float | None = None) -> list[int]:
    """Indices where a new segment starts, ascending; ``[]`` when the series is one segment.

    Segments are ``[0, c1), [c1, c2), ..., [ck, n)``. PELT minimises the sum over segments of
    ``m·(log(2π σ²) + 1)`` (``σ²`` the segment's maximum-likelihood variance, floored) plus ``penalty``
    per changepoint; ``penalty`` defaults to 15·log(n). Every segment has at least ``min_size`` points.
    ``quantum``: the values' known resolution (one instruction, for counts), where the floor otherwise
    takes the apparent one from the data (a timer's tick); see REL_STD_FLOOR.
    """
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError("changepoints() needs a 1-d series")
    if min_size < 2:
        raise ValueError("min_size must be at least 2 (a 1-point segment has no variance)")
    n = len(arr)
    pen = default_penalty(n) if penalty is None else float(penalty)
    if not math.isfinite(pen) or pen < 0:
        raise ValueError(f"penalty must be finite and >= 0, got {penalty!r}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("changepoints() needs finite values")
    prepared = _prepare(arr, quantum)
    if prepared is None or n < 2 * min_size:
        return []
    s1, s2, vfloor = prepared
    lib = _load_c()
    if lib is not None:
        return _pelt_c(lib, s1, s2, n, min_size, pen, vfloor)
    return _pelt_numpy(s1, s2, n, min_size, pen, vfloor)


def backend() -> str:
    """``"c"`` when the compiled PELT is in use, ``"numpy"`` when it could not be built or loaded."""
    return "c" if _load_c() is not None else "numpy"


def backend_problem() -> str | None:
    """Why the C backend is not in use (None when it is)."""
    _load_c()
    return _state.problem


# --------------------------------------------------------------------------------------------------
# Shared preparation


def _prepare(x: np.ndarray, quantum: float | None = None) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Prefix sums of the standardised series and the variance floor in the same units.

    Standardising (subtracting the mean, dividing by the standard deviation) changes every
    segmentation's total cost by the same constant, so the optimum is unchanged; it keeps the
    sums-of-squares arithmetic well conditioned whatever the units. None for a constant series.
    """
    n = len(x)
    if n < 2:
        return None
    centre = float(np.mean(x))
    scale = float(np.std(x))
    if not scale > 0.0:
        return None
    z = (x - centre) / scale
    floor = (REL_STD_FLOOR * float(np.mean(np.abs(x)))) ** 2
    if quantum is not None:  # a known resolution: exact counts take only a few distinct values, and the gap
        floor = max(floor, quantum * quantum / 12.0)  # between them is a change, not a timer's tick
    else:
        distinct = np.unique(x)
        if len(distinct) > 1:
            step = float(np.min(np.diff(distinct)))
            floor = max(floor, step * step / 12.0)
    vfloor = max(floor / (scale * scale), 1e-300)
    s1 = np.zeros(n + 1)
    s2 = np.zeros(n + 1)
    np.cumsum(z, out=s1[1:])
    np.cumsum(z * z, out=s2[1:])
    return s1, s2, vfloor


# --------------------------------------------------------------------------------------------------
# numpy reference


def _log_table(v: np.ndarray) -> np.ndarray:
    """Natural log of positive normal doubles, op for op as ``bb_log`` in _pelt.c: the exponent from the
    bits, a 256-cell table for the mantissa's leading bits, a degree-5 polynomial for log1p of the rest."""
    bits = v.view(np.uint64)
    e = ((bits >> 52).astype(np.int64) - 1023).astype(np.float64)
    j = ((bits & _CELL_BITS) >> 44).astype(np.intp)
    m = ((bits & _MANTISSA) | _ONE_BITS).view(np.float64)
    c = ((bits & _CELL_BITS) | _ONE_BITS | _HALF_CELL).view(np.float64)
    u = (m - c) * _INV_CENTRES[j]
    u2 = u * u
    return e * _LN2 + (_LOG_CENTRES[j] + ((u - u2 * 0.5) + (u2 * u) * ((1.0 / 3.0 - u * 0.25) + u2 * 0.2)))


def _cost(s1: np.ndarray, s2: np.ndarray, t: np.ndarray, s: int, vfloor: float) -> np.ndarray:
    """Cost of the segments ``[t_i, s)``, op for op as ``bb_value`` in _pelt.c (without its ``cf +``)."""
    ml = (s - t).astype(np.float64)
    inv = 1.0 / ml
    d1 = s1[s] - s1[t]
    d2 = s2[s] - s2[t]
    v = (d2 - d1 * d1 * inv) * inv
    v = np.where(v < vfloor, vfloor, v)
    return ml * (_log_table(v) + _KCONST)


def _pelt_numpy(s1: np.ndarray, s2: np.ndarray, n: int, min_size: int, pen: float, vfloor: float,
                f: np.ndarray | None = None) -> list[int]:
    """``f``, if given (n + 1 values), receives the optimal cost of each prefix (for tests)."""
    if n < 2 * min_size:
        return []
    f = np.empty(n + 1) if f is None else f
    last = np.zeros(n + 1, dtype=np.int64)
    f[0] = -pen
    zero = np.zeros(1, dtype=np.int64)
    for s in range(min_size, 2 * min_size):
        f[s] = (f[0] + _cost(s1, s2, zero, s, vfloor) + pen)[0]
    cand = np.array([0, min_size], dtype=np.int64)
    for s in range(2 * min_size, n + 1):
        vals = f[cand] + _cost(s1, s2, cand, s, vfloor) + pen
        i = int(np.argmin(vals))
        best = vals[i]
        f[s] = best
        last[s] = cand[i]
        cand = np.append(cand[vals <= best + pen], s - min_size + 1)
    out: list[int] = []
    t = int(last[n])
    while t > 0:
        out.append(t)
        t = int(last[t])
    return out[::-1]


# --------------------------------------------------------------------------------------------------
# C backend: compile once per source hash into a cache folder, load with ctypes


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tried = False
        self.lib: ctypes.CDLL | None = None
        self.problem: str | None = None


_state = _State()

_dptr = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_iptr = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")


def _open(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    fn = lib.bb_pelt
    fn.restype = ctypes.c_int64
    fn.argtypes = [_dptr, _dptr, ctypes.c_int64, ctypes.c_int64, ctypes.c_double, ctypes.c_double,
                   ctypes.c_double, _dptr, _dptr, _iptr, _iptr, _dptr, _dptr, _dptr, _dptr, _iptr,
                   ctypes.c_int64, ctypes.c_int64, _iptr, _iptr, _iptr, _dptr, _dptr, _dptr, _dptr,
                   _iptr]
    lib.bb_lanes.restype = ctypes.c_int64
    lib.bb_lanes.argtypes = [ctypes.c_int64]
    return lib


def _load_c() -> ctypes.CDLL | None:
    if _state.tried:
        return _state.lib
    with _state.lock:
        if _state.tried:
            return _state.lib
        if os.environ.get("BRIDGEBENCH_PELT_BACKEND", "").lower() == "numpy":
            _state.problem = "BRIDGEBENCH_PELT_BACKEND=numpy"
        else:
            try:
                target = native.compiled(_C_SOURCE, _C_FLAGS, ("-lm",), ".so")
                try:
                    _state.lib = _open(target)
                except OSError:  # a damaged cache entry: build it again once
                    native.build(_C_SOURCE, target, _C_FLAGS, ("-lm",))
                    _state.lib = _open(target)
                log.debug("C PELT from %s, %d-lane cost loop", target, _state.lib.bb_lanes(0))
            except (OSError, subprocess.SubprocessError, AttributeError) as exc:
                _state.problem = f"C PELT unavailable, using numpy: {exc}"
                log.warning("%s", _state.problem)
        _state.tried = True
        return _state.lib


def _pelt_c(lib: ctypes.CDLL, s1: np.ndarray, s2: np.ndarray, n: int, min_size: int, pen: float,
            vfloor: float, lanes: int = 0, f: np.ndarray | None = None, set_aside: bool = True,
            evaluations: list[int] | None = None) -> list[int]:
    """``lanes``: 0 = the fastest cost loop this CPU can run (4-lane AVX2 on x86-64), 2 = the portable one.
    ``set_aside``: skip the starts that provably cannot win (see _pelt.c); False = the plain search.
    ``f``, if given (n + 1 values), receives the optimal cost of each prefix, and ``evaluations``, if
    given, the number of segment costs computed (both for tests)."""
    f = np.empty(n + 1) if f is None else f
    last = np.zeros(n + 1, dtype=np.int64)
    ints = np.zeros((4, n + 1), dtype=np.int64)  # cand, alive, aidx, acand
    work = np.empty((8, n + 1))  # c1, c2, cf, vals, a1, a2, af, avals
    out = np.zeros(max(n, 1), dtype=np.int64)
    evals = np.zeros(1, dtype=np.int64)
    count = lib.bb_pelt(s1, s2, n, min_size, pen, vfloor, _KCONST, _TABLE, f, last, ints[0], work[0], work[1],
                        work[2], work[3], out, lanes, int(set_aside), ints[1], ints[2], ints[3], work[4],
                        work[5], work[6], work[7], evals)
    if evaluations is not None:
        evaluations.append(int(evals[0]))
    return [int(c) for c in out[:count]]
