"""Number formatting shared by the reports: durations (or instruction counts) with a unit, ratios, classes."""

from __future__ import annotations

from bridgebench.digits import significant
from bridgebench.instructions import INSTRUCTIONS, SECONDS
from bridgebench.stats import (
    BAD_INCONSISTENT,
    FLAT,
    GOOD_INCONSISTENT,
    NO_STEADY_STATE,
    SLOWDOWN,
    WARMUP,
    Estimate,
    Spread,
)
from bridgebench.stats.summary import NOT_CLASSIFIED

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
# Counts are analysed in billions of instructions (counting.ANALYSED_PER): the same steps, other names.
_COUNT_UNITS = ((1.0, "G Ir"), (1e-3, "M Ir"), (1e-6, "k Ir"), (1e-9, "Ir"))

CLASS_SYMBOL = {FLAT: "flat", WARMUP: "warmup", SLOWDOWN: "slowdown", NO_STEADY_STATE: "no steady",
                GOOD_INCONSISTENT: "good incons.", BAD_INCONSISTENT: "bad incons.", NOT_CLASSIFIED: "n/a"}

DASH = "\u2013"  # between an interval's ends



def unit_for(value: float, metric: str = SECONDS) -> tuple[float, str]:
    units = _COUNT_UNITS if metric == INSTRUCTIONS else _UNITS
    for scale, unit in units:
        if abs(value) >= scale:
            return scale, unit
    return units[-1]


def duration(value: float | None, digits: int = 3, metric: str = SECONDS) -> str:
    """Seconds, or with metric=instructions a count in billions, with its unit."""
    if value is None:
        return "—"
    if value == 0:
        return "0 s" if metric == SECONDS else "0 Ir"
    value = float(f"{value:.{digits}g}")  # rounded first, so 0.99996 s is "1 s", never "1e+03 ms"
    scale, unit = unit_for(value, metric)
    shown = value / scale
    return f"{shown:.0f} {unit}" if abs(shown) >= 10 ** digits else f"{shown:.{digits}g} {unit}"  # never "1.4e+02"


NO_INTERVAL = "too few executions"  # shown where an estimate has no interval (stats.executions)
MISPLACED = 0.1  # a ± misplacing an interval's near end by more than this share of the value: its ends instead


def estimate(est: Estimate | None, metric: str = SECONDS) -> str:
    """Value ± half-width of the CI, in the value's unit (the CI may be asymmetric: the larger side), or the CI's
    ends where a ± would misstate it: a ± that puts the near end more than MISPLACED of the value away from where
    it is, or that reaches zero (a time cannot), as a log-scale interval from three executions often would
    ("543.5 ms (294–1041)", never "543.5 ±497 ms")."""
    if not est:
        return "—"
    scale, unit = unit_for(est.value, metric)
    if est.low is None or est.high is None or est.reach is None:
        return f"{est.value / scale:.4g} {unit} ({NO_INTERVAL})"
    near, far = sorted((est.value - est.low, est.high - est.value))
    if far - near > MISPLACED * abs(est.value) or est.reach >= abs(est.value) > 0:
        ends = f"{significant(est.low / scale, 3)}{DASH}{significant(est.high / scale, 3)}"
        return f"{est.value / scale:.4g} {unit} ({ends})"
    half = est.reach / scale
    if 0 < half < 1e-3:  # far below the value's unit (a count that barely moves): in its own, never "1.2e-05"
        return f"{est.value / scale:.4g} {unit} ±{duration(half * scale, 2, metric)}"
    return f"{est.value / scale:.4g} ±{significant(half, 2)} {unit}"


def count(value: float | None) -> str:
    """B/op, allocs/op: whole numbers where large, one decimal where small."""
    if value is None:
        return "—"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def _plain(x: float, digits: int = 3) -> str:
    return f"{x:,.0f}" if x >= 1000 else significant(x, digits)


def times(x: float, digits: int = 3) -> str:
    """A ratio as "×2.47" or "×24,700", never in exponent notation."""
    return f"×{_plain(x, digits)}"


def ratio(est: Estimate | None, precise: bool = False) -> str:
    """A ratio with its interval; `precise` (counts, whose ratios move in the fourth digit) shows 6 digits."""
    if not est:
        return "—"
    digits = 6 if precise else 3
    if est.low is None or est.high is None:
        return f"{times(est.value, digits)} ({NO_INTERVAL})"
    return f"{times(est.value, digits)} ({_plain(est.low, digits)}–{_plain(est.high, digits)})"


def spread(sp: Spread | None, as_duration: bool = False, metric: str = SECONDS) -> str:
    if not sp:
        return "—"
    show = (lambda v: duration(v, metric=metric)) if as_duration else (lambda v: f"{v:.0f}")
    return f"{show(sp.median)} ({show(sp.p5)}–{show(sp.p95)})"


def rss(kib: float | None) -> str:
    return f"{kib / 1024:.0f} MiB" if kib else "—"
