"""The SVG kit both kinds' HTML reports draw with (report/html.py, loadtest/report.py): text made safe,
coordinates written short, round ticks, one palette, and a figure's opening with its accessible name."""

from __future__ import annotations

import html
import math
from typing import Any

# Tableau's ten: a trace signature's colour in the timing report, a server's line in the load report.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
END = "</svg>"


def escape(value: Any) -> str:
    """Text made safe for HTML (the reports embed names and messages from study files and probes)."""
    return html.escape(str(value), quote=True)


def coord(x: float) -> str:
    """An SVG coordinate, short."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def start(width: float, height: float, label: str) -> str:
    """A figure's opening tag, scaled by its viewBox, named for screen readers and as its tooltip."""
    text = escape(label)
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{text}"><title>{text}</title>')


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times 10^k apart) within [lo, hi], about `count` of them (at most
    count+1)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    mag = 10 ** math.floor(math.log10((hi - lo) / count))
    step = next(m * mag for m in (1, 2, 5, 10) if (hi - lo) / (m * mag) <= count + 1)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    k = 0
    while first + k * step <= hi + step * 1e-9:
        ticks.append(first + k * step)
        k += 1
    return ticks


def tick_label(value: float, step: float) -> str:
    """A tick's value with as many decimals as its step needs."""
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    return f"{value:.{decimals}f}"


def log_ticks(lo: float, hi: float) -> list[float]:
    """The powers of ten from below lo to above hi."""
    return [10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
