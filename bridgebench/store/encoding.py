"""How a process execution's iterations are stored: one little-endian float64 array per execution and
quantity (the iteration times under SECONDS, each probe counter under its own name)."""

from __future__ import annotations

import numpy as np

SECONDS = "seconds"  # the series of iteration times; a counter may not take this name
FLOAT64 = np.dtype("<f8")


def to_blob(values: list[float] | np.ndarray) -> bytes:
    return np.asarray(values, dtype=FLOAT64).tobytes()


def from_blob(data: bytes) -> np.ndarray:
    """The values to_blob stored, as a native float64 array the caller may change."""
    return np.frombuffer(data, dtype=FLOAT64).astype(np.float64)
