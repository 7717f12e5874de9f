"""Outliers by warmup_stats's sliding-window rule (Barrett et al. 2017, after Tukey)."""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import threading
from pathlib import Path

import numpy as np

from bridgebench import native

__all__ = ["MIN_ITERATIONS_FOR_OUTLIERS", "backend", "outlier_mask"]

log = logging.getLogger(__name__)

MIN_ITERATIONS_FOR_OUTLIERS = 10
"""Below this many iterations nothing is called an outlier: a window that small has no useful spread."""

_BLOCK_CELLS = 1 << 20  # bounds the memory of the window matrix (rows × window) for long series


WINDOW_RATIO = 0.1  # bin/warmup_stats passes a window of int(0.1 · iterations) to its outlier marker
MIN_WINDOW = 20  # below this, one outlier sets a window's P10-P90 spread itself, and nothing is ever flagged


def default_window(n: int) -> int:
    """The outlier window for a series of n iterations: int(0.1 n), as bin/warmup_stats passes it (200 at
    its 2000 iterations), but at least MIN_WINDOW (the series' length when that is shorter)."""
    return max(MIN_WINDOW, int(WINDOW_RATIO * n))


def outlier_mask(times: np.ndarray, window: int | None = None) -> np.ndarray:
    """True where an iteration is an outlier.

    Each iteration ``i`` is judged within the window ``[i - h, i + h)`` (``h = w // 2``, clipped at the
    ends of the series; ``w`` = ``window`` (default ``default_window(n)``), or the series' length if that is
    shorter): it is an outlier if
    it lies outside the window's median ± 3·(P90 - P10), percentiles interpolated linearly. As in
    warmup_stats, an iteration whose window is cut short by the *start* of the series (``i - h < 0`` and the
    clipped window shorter than ``w``) is never an outlier, so that warm-up iterations are kept for the
    changepoint analysis rather than thrown away. Series shorter than 10 have no outliers.
    """
    x = np.asarray(times, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("outlier_mask() needs a 1-d series")
    if window is not None and window < 2:
        raise ValueError(f"window must be at least 2, got {window}")
    if not np.all(np.isfinite(x)):
        raise ValueError("outlier_mask() needs finite values")
    n = len(x)
    mask = np.zeros(n, dtype=bool)
    if n < MIN_ITERATIONS_FOR_OUTLIERS:
        return mask
    if window is None:
        window = default_window(n)
    w = min(window, n)
    lib = _load_c()
    if lib is not None:
        marks = np.zeros(n, dtype=np.uint8)
        lib.bb_outliers(np.ascontiguousarray(x), n, w, np.empty(w + 2), marks)
        return marks.astype(bool)
    return _outliers_numpy(x, w, mask)


def _outliers_numpy(x: np.ndarray, w: int, mask: np.ndarray) -> np.ndarray:
    """The reference: every judged window copied out and sorted (as warmup_stats does)."""
    n = len(x)
    h = w // 2
    idx = np.arange(n)
    lo = np.maximum(idx - h, 0)
    hi = np.minimum(idx + h, n)
    judged = np.flatnonzero(~((lo == 0) & (hi - lo < w)))
    if len(judged) == 0:
        return mask
    width = 2 * h
    block = max(1, _BLOCK_CELLS // width)
    for start in range(0, len(judged), block):
        rows = judged[start:start + block]
        # One row per judged iteration: its window, padded with +inf past the end of the series, sorted.
        cols = lo[rows, None] + np.arange(width)[None, :]
        windows = np.where(cols < hi[rows, None], x[np.minimum(cols, n - 1)], np.inf)
        windows.sort(axis=1)
        count = hi[rows] - lo[rows]
        p10, p50, p90 = (_percentile_sorted(windows, count, q) for q in (10.0, 50.0, 90.0))
        band = 3.0 * (p90 - p10)
        value = x[rows]
        mask[rows] = (value > p50 + band) | (value < p50 - band)
    return mask


def _percentile_sorted(rows: np.ndarray, count: np.ndarray, q: float) -> np.ndarray:
    """Per row, the q-th percentile of its first ``count`` entries, interpolated linearly between the closest
    ranks (numpy's default method, and warmup_stats's)."""
    pos = (count - 1) * (q / 100.0)
    below = np.floor(pos).astype(np.intp)
    above = np.ceil(pos).astype(np.intp)
    r = np.arange(len(rows))
    lo_val = rows[r, below]
    hi_val = rows[r, above]
    frac = pos - below
    return np.where(below == above, lo_val, lo_val * (1.0 - frac) + hi_val * frac)


# --- the compiled kernel (_outliers.c): the window kept sorted as it slides; the same masks, faster ---------
_C_SOURCE = Path(__file__).with_name("_outliers.c")
_C_FLAGS = ("-O2", "-shared", "-fPIC", "-ffp-contract=off")
_lock = threading.Lock()
_loaded: list[ctypes.CDLL | None] = []  # empty until tried; then [library] or [None]


def _open(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    dptr = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
    lib.bb_outliers.restype = None
    lib.bb_outliers.argtypes = [dptr, ctypes.c_int64, ctypes.c_int64, dptr,
                                np.ctypeslib.ndpointer(dtype=np.uint8, flags="C_CONTIGUOUS")]
    return lib


def _load_c() -> ctypes.CDLL | None:
    with _lock:
        if not _loaded:
            lib = None
            if os.environ.get("BRIDGEBENCH_OUTLIERS_BACKEND", "").lower() != "numpy":
                try:
                    lib = _open(native.compiled(_C_SOURCE, _C_FLAGS, (), ".so"))
                except (OSError, subprocess.SubprocessError, AttributeError) as exc:
                    log.warning("C outlier kernel unavailable, using numpy: %s", exc)
            _loaded.append(lib)
        return _loaded[0]


def backend() -> str:
    """``"c"`` when the compiled kernel is in use, ``"numpy"`` otherwise (no compiler, or
    BRIDGEBENCH_OUTLIERS_BACKEND=numpy)."""
    return "c" if _load_c() is not None else "numpy"
