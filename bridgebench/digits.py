"""Numbers to a few significant digits in positional notation: what every report, headline and doctor line prints,
never in exponent notation ("1e+02", "1.5e-05"), which Python's "g" format falls into near a power of ten."""

from __future__ import annotations

import numpy as np


def significant(x: float, digits: int) -> str:
    """x to `digits` significant digits, whole numbers as they are: 270, 99.7 -> "100", 0.012; never "1e+02"."""
    if x == 0 or abs(x) >= 10 ** (digits - 1):
        return f"{x:.0f}"
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")
