"""The HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched) with the class
table, a comparison chart per benchmark, and the run-sequence plot of every process execution.

Statistics come from the analysis result, and only from it; the raw iterations to plot are read through
analysis.Series.
Process executions are numbered from 1 here, as in the terminal output."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from bridgebench.instructions import INSTRUCTIONS, SECONDS
from bridgebench.report import fmt, speed, svg
from bridgebench.report.html import PLOT_H, PLOT_W, page, table
from bridgebench.report.svg import coord, escape
from bridgebench.stats import (
    BAD_INCONSISTENT,
    FLAT,
    GOOD_INCONSISTENT,
    NO_STEADY_STATE,
    SLOWDOWN,
    WARMUP,
    Estimate,
)
from bridgebench.timing.analysis import Series
from bridgebench.timing.report import tables
from bridgebench.timing.result import Analysis, Cell, Run, SegmentMean

# class -> (table background, plot/legend colour, verdict)
CLASS_COLOURS: dict[str, tuple[str, str, str]] = {
    FLAT: ("#d7efd7", "#2e7d32", "good"),
    WARMUP: ("#e4f3cf", "#5b8c1e", "good"),
    GOOD_INCONSISTENT: ("#fbefc0", "#a67c00", "between"),
    SLOWDOWN: ("#f9d8cc", "#c43e1c", "bad"),
    NO_STEADY_STATE: ("#f7d2e2", "#a8275f", "bad"),
    BAD_INCONSISTENT: ("#f3c9c9", "#a61b1b", "bad"),
}
NO_CLASS = ("#ececec", "#666666", "not classified")
TIMES = " \u00d7 "

MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 52, 16, 18, 30


def _class_colours(name: str | None) -> tuple[str, str, str]:
    return CLASS_COLOURS.get(name or "", NO_CLASS)


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch)) if epoch else "—"


def _y_range(ys: np.ndarray, marks: np.ndarray | None, segments: Sequence[SegmentMean]) -> tuple[float, float]:
    """What the y axis spans: the points not marked as outliers, but not isolated spikes far beyond the
    bulk of them (1st-99th percentile, widened by its width each way), and always the mean of every segment
    that is not tiny, so a warm-up stays in view while a few huge values do not flatten the plot."""
    inside = ys[~marks] if marks is not None and len(marks) == len(ys) and not marks.all() else ys
    q_lo, q_hi = (float(q) for q in np.quantile(inside, [0.01, 0.99]))
    width = q_hi - q_lo
    lo = max(float(np.min(inside)), q_lo - width)
    hi = min(float(np.max(inside)), q_hi + width)
    means = [seg.mean for seg in segments if seg.end - seg.start >= max(5, len(ys) // 100)]
    return min([lo, *means]), max([hi, *means])


def _downsample(ys: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) for a polyline: every point if few, else the min and max of each pixel column (1-based x)."""
    n = len(ys)
    xs = np.arange(1, n + 1, dtype=float)
    if n <= 2 * columns:
        return xs, ys
    edges = np.linspace(0, n, columns + 1).astype(int)
    starts = edges[:-1]
    lows = np.minimum.reduceat(ys, starts)
    highs = np.maximum.reduceat(ys, starts)
    mids = (edges[:-1] + edges[1:]) / 2 + 0.5
    return np.repeat(mids, 2), np.column_stack([lows, highs]).ravel()


def line_plot(ys: np.ndarray, *, label: str, changepoints: Sequence[int] = (),
              segments: Sequence[SegmentMean] = (), steady_start: int | None = None,
              marks: np.ndarray | None = None, colour: str = "#35608f", width: int = PLOT_W,
              height: int = PLOT_H, metric: str = SECONDS) -> str:
    """A run-sequence plot (iteration number on x, seconds on y) as inline SVG: ticks on both axes, the
    steady region shaded, each segment's mean drawn, changepoints as dashed lines, marked points circled."""
    n = len(ys)
    x0, x1, y0, y1 = MARGIN_L, width - MARGIN_R, height - MARGIN_B, MARGIN_T
    parts = [svg.start(width, height, label)]
    if n == 0:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">no iterations</text>'
                     + svg.END)
        return "".join(parts)
    lo, hi = _y_range(ys, marks, segments)
    pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1e-9
    lo, hi = max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad

    def px(i: float) -> float:  # i: 1-based iteration (may be fractional)
        return x0 + (i - 0.5) / n * (x1 - x0)

    def py(v: float) -> float:
        return y0 - (v - lo) / (hi - lo) * (y0 - y1)

    scale, unit = fmt.unit_for(max(abs(hi), abs(lo)), metric)
    if steady_start is not None and steady_start < n:
        left = px(steady_start + 0.5)
        parts.append(f'<rect x="{coord(left)}" y="{y1}" width="{coord(px(n + 0.5) - left)}" height="{y0 - y1}" '
                     'fill="#2e7d32" fill-opacity="0.09"/>')
    # axes and ticks
    parts.append(f'<path d="M{x0} {y1}V{y0}H{x1}" fill="none" stroke="#888" stroke-width="1"/>')
    yticks = svg.nice_ticks(lo / scale, hi / scale, 5)
    ystep = yticks[1] - yticks[0] if len(yticks) > 1 else 1.0
    for t in yticks:
        y = py(t * scale)
        parts.append(f'<path d="M{x0 - 4} {coord(y)}H{x1}" stroke="#e6e6e6" stroke-width="1"/>'
                     f'<text x="{x0 - 6}" y="{coord(y + 3.5)}" text-anchor="end">{svg.tick_label(t, ystep)}</text>')
    parts.append(f'<text x="{x0 - 6}" y="{y1 - 8}" text-anchor="end">{escape(unit)}</text>')
    for t in svg.nice_ticks(1, n, 5):
        if t != int(t):
            continue
        x = px(t)
        parts.append(f'<path d="M{coord(x)} {y0}v4" stroke="#888"/>'
                     f'<text x="{coord(x)}" y="{y0 + 15}" text-anchor="middle">{int(t)}</text>')
    parts.append(f'<text x="{x1}" y="{height - 2}" text-anchor="end" class="muted">iteration</text>')
    # data
    xs, vs = _downsample(np.clip(ys, lo, hi), int(x1 - x0))
    points = " ".join(f"{coord(px(x))},{coord(py(v))}" for x, v in zip(xs, vs, strict=True))
    parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1" '
                 f'stroke-linejoin="round"/>')
    for seg in segments:
        y = py(min(max(seg.mean, lo), hi))
        parts.append(f'<path d="M{coord(px(seg.start + 0.5))} {coord(y)}H{coord(px(seg.end + 0.5))}" '
                     f'stroke="{"#2e7d32" if seg.steady else "#e07b00"}" stroke-width="2"/>')
    for cp in changepoints:
        x = coord(px(cp + 0.5))
        parts.append(f'<path d="M{x} {y1}V{y0}" stroke="#c62828" stroke-width="1" stroke-dasharray="4 3"/>')
    if marks is not None:
        for i in np.flatnonzero(marks & (ys >= lo) & (ys <= hi))[:2000]:
            parts.append(f'<circle cx="{coord(px(i + 1))}" cy="{coord(py(float(ys[i])))}" r="2.2" fill="none" '
                         'stroke="#d32f2f"/>')
    # points off the scale: a triangle on the edge, pointing the way (red for outliers)
    for i in np.flatnonzero((ys > hi) | (ys < lo))[:2000]:
        y, d = (y1, -5) if ys[i] > hi else (y0, 5)
        fill = "#d32f2f" if marks is not None and marks[i] else "#555"
        parts.append(f'<path d="M{coord(px(i + 1))} {coord(y + d)}l-3 {-d}h6z" fill="{fill}"/>')
    parts.append(svg.END)
    return "".join(parts)


def _whisker(x_low: float, x_high: float, yc: float, stroke: str, width: float) -> str:
    """A confidence interval drawn as a horizontal line with end ticks."""
    low, high, mid, top = coord(x_low), coord(x_high), coord(yc), coord(yc - 5)
    return (f'<path d="M{low} {mid}H{high}M{low} {top}v10M{high} {top}v10" '
            f'stroke="{stroke}" stroke-width="{width}" fill="none"/>')


ChartRow = tuple[str, Estimate | None, str, str]  # name, estimate, colour, text shown after it


def _marked_rows(parts: list[str], rows: Sequence[ChartRow], x0: float, top: float, row_h: float,
                 missing: str) -> Iterator[tuple[float, ChartRow]]:
    """Write each row's name left of the axis; for a row without an estimate, its text (or `missing`) in
    place of a mark. Yields the rows that have an estimate, with the y of their centre line."""
    for k, row in enumerate(rows):
        name, est, _, text = row
        yc = top + row_h * k + row_h / 2
        parts.append(f'<text x="{x0 - 8}" y="{coord(yc + 4)}" text-anchor="end">{escape(name)}</text>')
        if not est:
            parts.append(f'<text x="{x0 + 6}" y="{coord(yc + 4)}" class="muted">{escape(text or missing)}</text>')
            continue
        yield yc, row


def interval_chart(rows: Sequence[ChartRow], *, reference: float | None,
                   label: str, bars: int = 300, metric: str = SECONDS) -> str:
    """Horizontal bars from 0 to each estimate with its CI as a whisker; rows are (name, estimate, colour,
    text shown after the bar). A dashed line marks the reference (the baseline's value). The names'
    column is as wide as the longest name needs (6.5 px a character, at most 260 px)."""
    row_h, top, bottom, right = 24, 8, 32, 250
    left = min(260, 16 + round(6.5 * max((len(r[0]) for r in rows), default=4)))
    width = left + bars + right
    height = top + bottom + row_h * max(1, len(rows))
    x0, x1 = left, left + bars
    highs = [v for r in rows if r[1] for v in (r[1].high, r[1].value) if v is not None]
    hi = max(highs) * 1.05 if highs and max(highs) > 0 else 1.0
    scale, unit = fmt.unit_for(hi, metric)

    def px(v: float) -> float:
        return x0 + v / hi * (x1 - x0)

    parts = [svg.start(width, height, label)]
    ticks = svg.nice_ticks(0, hi / scale, 5)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    y_axis = height - bottom
    for t in ticks:
        x = coord(px(t * scale))
        parts.append(f'<path d="M{x} {top}V{y_axis + 4}" stroke="#e6e6e6"/>'
                     f'<text x="{x}" y="{y_axis + 16}" text-anchor="middle">{svg.tick_label(t, step)}</text>')
    parts.append(f'<text x="{x1}" y="{height - 4}" text-anchor="end">{escape(unit)} per iteration</text>')
    parts.append(f'<path d="M{x0} {top}V{y_axis}H{x1}" fill="none" stroke="#888"/>')
    for yc, (_, est, colour, text) in _marked_rows(parts, rows, x0, top, row_h, "no data"):
        assert est is not None
        parts.append(f'<rect x="{x0}" y="{coord(yc - 7)}" width="{coord(px(est.value) - x0)}" height="14" '
                     f'fill="{colour}" fill-opacity="0.55"/>')
        if est.low is not None and est.high is not None:  # no interval: the bar alone
            parts.append(_whisker(px(est.low), px(est.high), yc, "#222", 1.3))
        parts.append(f'<text x="{x1 + 8}" y="{coord(yc + 4)}">{escape(text)}</text>')
    if reference:
        x = coord(px(reference))
        parts.append(f'<path d="M{x} {top}V{y_axis}" stroke="#444" stroke-dasharray="3 3"/>')
    parts.append(svg.END)
    return "".join(parts)


# A verdict's colour wherever one is drawn (a campaign's forest plot, the differ's chart and table).
VERDICT_COLOUR = {"faster": "#2e7d32", "slower": "#c62828", "different": "#b8860b", "equivalent": "#1f5fa8",
                  "undecided": "#777"}
MARGIN_FILL = "#e3ecf7"


def ratio_chart(rows: Sequence[ChartRow], *, label: str, width_px: int = 360, margin: float | None = None,
                axis: str = "B / A (steady performance)") -> str:
    """One row per benchmark: the ratio B/A as a dot with its CI as a whisker, on a linear axis that always
    holds 1 (dashed: no difference) and, given a margin, the band 1 ± margin shaded (equivalent within it).
    Rows are (name, ratio {value, low, high}, colour, text after it)."""
    row_h, top, bottom, right = 24, 8, 32, 300
    left = min(260, 16 + round(6.5 * max((len(r[0]) for r in rows), default=4)))
    width = left + width_px + right
    height = top + bottom + row_h * max(1, len(rows))
    band = [1.0 - margin, 1.0 + margin] if margin else []
    values = [v for r in rows if r[1] for v in (r[1].low, r[1].high, r[1].value) if v is not None] + [1.0, *band]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.05 or 0.05
    lo, hi = max(0.0, lo - pad), hi + pad
    x0, x1 = left, left + width_px

    def px(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    parts = [svg.start(width, height, label)]
    ticks = [t for t in svg.nice_ticks(lo, hi, 6) if lo <= t <= hi]
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    y_axis = height - bottom
    for t in ticks:
        x = coord(px(t))
        parts.append(f'<path d="M{x} {top}V{y_axis + 4}" stroke="#e6e6e6"/>'
                     f'<text x="{x}" y="{y_axis + 16}" text-anchor="middle">{TIMES.strip()}{svg.tick_label(t, step)}'
                     "</text>")
    parts.append(f'<text x="{x1}" y="{height - 4}" text-anchor="end">{escape(axis)}</text>')
    if band:
        parts.append(f'<rect class="margin" x="{coord(px(band[0]))}" y="{top}" '
                     f'width="{coord(px(band[1]) - px(band[0]))}" height="{y_axis - top}" fill="{MARGIN_FILL}"/>')
    parts.append(f'<path d="M{x0} {y_axis}H{x1}" fill="none" stroke="#888"/>')
    one = coord(px(1.0))
    parts.append(f'<path d="M{one} {top}V{y_axis}" stroke="#444" stroke-dasharray="3 3"/>')
    for yc, (_, ratio, colour, text) in _marked_rows(parts, rows, x0, top, row_h, "no ratio"):
        assert ratio is not None
        whisker = (_whisker(px(ratio.low), px(ratio.high), yc, colour, 1.6)
                   if ratio.low is not None and ratio.high is not None else "")  # no interval: the dot alone
        parts.append(whisker + f'<circle class="ratio" cx="{coord(px(ratio.value))}" cy="{coord(yc)}" r="4" '
                               f'fill="{colour}"/>')
        parts.append(f'<text x="{x1 + 8}" y="{coord(yc + 4)}">{escape(text)}</text>')
    parts.append(svg.END)
    return "".join(parts)


def _legend() -> str:
    items = [f'<span style="background:{bg}"><span class="swatch" style="background:{fg}"></span>'
             f"{escape(name)} — {escape(verdict)}</span>" for name, (bg, fg, verdict) in CLASS_COLOURS.items()]
    bg, fg, verdict = NO_CLASS
    items.append(f'<span style="background:{bg}"><span class="swatch" style="background:{fg}"></span>'
                 f"{escape(verdict)}</span>")
    return f'<p class="legend">{"".join(items)}</p>'


def _header(result: Analysis) -> str:
    """What the campaign was: its budget, what disturbed it, and its facts (below the answer and the
    forest plot)."""
    c = result.campaign
    o = c.options
    budget = f"{tables.budget_words(result)}; timeout {o.get('timeout_s', '?')} s per process execution"
    facts = [("State", c.state), ("Machine", c.machine), ("CPU", c.environment.get("cpu_model")),
             ("Started", _when(c.created)), ("Finished", _when(c.finished)), ("Git", c.git_sha),
             ("Baseline", result.label(result.baseline) if result.baseline else "none"),
             ("Confidence", f"{result.confidence:.0%}" + (f" (each interval at {result.interval_confidence:.2%}, over "
                                                          f"{result.looks} looks)" if result.looks > 1 else "")),
             ("Steady state", tables.steady_words(result)),
             ("Ratios", tables.ratio_methods(result) or "—"), ("Pairing", tables.pairing_words(result) or "—")]
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v if v not in (None, '') else '—')}</dd>" for k, v in facts)
    # the lines under the budget, each as a warning or a plain note (the markdown report's, in its order)
    warn = "".join(f'<p class="{kind}">{escape(line)}</p>' for line, kind in (
        (tables.disturbance_line(result), "warning"), (tables.adaptive_line(result), "budget"),
        (tables.more_time_line(result), "budget"), (tables.replaced_note(result), "budget"),
        (tables.metric_line(result), "budget"), (tables.few_executions_line(result), "warning"),
        (tables.unseparated_line(result), "warning"), (tables.per_call_line(result), "budget"),
        (speed.line(result.campaign), "warning" if speed.warning(result.campaign) else "budget")) if line)
    unsettled = tables.unsettled_rows(result)
    if unsettled:
        warn += ("<details><summary>Not settled by the adaptive budget</summary>"
                 + table(("Benchmark", "Mechanism", "State", "Why"), unsettled) + "</details>")
    return f'<section id="campaign"><p class="budget">{escape(budget)}</p>{warn}<dl class="facts">{dl}</dl></section>'


def _title(result: Analysis) -> str:
    """The page's top: the campaign, and the study's question answered in words."""
    c = result.campaign
    answer = "".join(f'<p class="{"headline" if i == 0 else "budget"}">{escape(line)}</p>'
                     for i, line in enumerate(tables.headline_lines(result)))
    return f"<header><h1>bridgebench: {escape(c.study)}, campaign {escape(c.id)}</h1>{answer}</header>"


def _summary(result: Analysis) -> str:
    cells = result.cells
    pct = f"{result.confidence:.0%}"
    base = result.baseline
    rss = tables.has_rss(result)
    columns = ("Benchmark", "Mechanism", "Class (executions)", f"Steady iteration # (5{fmt.DASH}95%)",
               f"Steady performance (\u00b1{pct} CI)", f"Ratio to {result.label(base)}" if base else "Ratio",
               *(("Peak RSS",) if rss else ()), "Failures", "Disturbed")
    rows = []
    for cell in cells:
        ratio = ("baseline" if base and cell.mechanism == base and cell.ratio
                 else fmt.ratio(cell.ratio, precise=result.metric == INSTRUCTIONS))
        rows.append((cell.benchmark, result.label(cell.mechanism), tables.class_text(cell),
                     fmt.spread(cell.steady_iteration), fmt.estimate(cell.steady_performance, result.metric),
                     ratio, *((fmt.rss(cell.peak_rss_kb),) if rss else ()), tables.failures(cell) or "—",
                     tables.disturbed_cell(cell) or "—"))
    summary = table(columns, rows, numeric=(3, 4, 5, *((6,) if rss else ())),
                    row_style=lambda k: f"background:{_class_colours(cells[k].classification)[0]}")
    out = f'<section id="summary"><h2>Steady state per benchmark{TIMES}mechanism</h2>{_legend()}{summary}'
    moving = tables.drift_note(result)
    out += f"<p class=\"note\">{escape(moving)}</p>" if moving else ""
    workloads = tables.workload_rows(result)
    if workloads:
        out += "<h3>What each benchmark ran</h3>" + table(tables.WORKLOAD_COLUMNS, workloads)
    if result.geomean_ratio:
        ranked = sorted(result.geomean_ratio.items(), key=lambda x: x[1])
        out += (f"<h3>{escape(tables.geomean_title(result, result.label(base)))}</h3>"
                + table(("Mechanism", "Geomean ratio"), [(result.label(m), f"{TIMES.strip()}{g:.3g}")
                                                          for m, g in ranked], numeric=(1,)))
    paired = tables.pairing_rows(result)
    if paired:
        notes = [n for n in (tables.within_line(result), tables.modes_note(result), tables.turns_note(result)) if n]
        out += (f"<h3>Lock-step blocks</h3><p class=\"note\">{escape(tables.PAIRING_NOTE)}</p>"
                + table(tables.PAIRING_COLUMNS, paired, numeric=(2, 4, 5, 6, 7))
                + "".join(f"<p class=\"note\">{escape(n)}</p>" for n in notes))
    jit = tables.jit_rows(result)
    if jit:
        out += (f"<h3>What LuaJIT's compiler did</h3><p class=\"note\">{escape(tables.JIT_NOTE)}</p>"
                + table(tables.JIT_COLUMNS, jit, numeric=(3, 4)))
    beside = tables.beside_line(result)
    if beside:
        out += f'<h3>Counts beside time</h3><p class="note">{escape(beside)}</p>'
        rows = tables.beside_rows(result)
        out += table(tables.BESIDE_COLUMNS, rows, numeric=(2, 3, 4)) if rows else ""
    return out + "</section>"


def _verdicts(result: Analysis) -> str:
    """The forest plot, first: per mechanism compared with the baseline (the headline's first), each
    benchmark's ratio with its interval, the equivalence margin shaded, the verdict as the colour."""
    base = result.baseline
    order = tables.answer_order(result) if base else []
    if not order:
        return ""
    figures = []
    for mechanism in order:
        rows: list[ChartRow] = []
        for bench in result.benchmarks:
            cell = result.cell(bench, mechanism)
            if cell is None:
                continue
            if cell.ratio is None:
                rows.append((bench, None, "", "no ratio"))
                continue
            state = tables.verdict(result, cell)
            rows.append((bench, cell.ratio, VERDICT_COLOUR[state],
                         f"{state} {fmt.ratio(cell.ratio, precise=result.metric == INSTRUCTIONS)}"))
        chart = ratio_chart(rows, margin=result.equivalence,
                            label=f"{result.label(mechanism)} / {result.label(base)} per benchmark",
                            axis=f"{result.label(mechanism)} / {result.label(base)}")
        figures.append(f'<figure class="forest"><figcaption><b>{escape(result.label(mechanism))}</b> against '
                       f"{escape(result.label(base))}</figcaption>{chart}</figure>")
    legend = "".join(f'<span><span class="swatch" style="background:{colour}"></span>{escape(state)}</span>'
                     for state, colour in VERDICT_COLOUR.items() if state != "different")
    note = (f"Dot: the ratio of steady performance to {result.label(base)} (above 1: slower); whisker: its "
            f"interval ({tables.interval_words(result)}); shaded: within ±{result.equivalence:.0%}, where a "
            "ratio whose whole interval lies is equivalent; colour: the verdict.")
    return (f'<section id="verdicts"><h2>Verdicts</h2><p class="note">{escape(note)}</p>'
            f'<p class="legend">{legend}</p>{"".join(figures)}</section>')


def _comparison(result: Analysis) -> str:
    base = result.baseline
    pct = f"{result.confidence:.0%}"
    figures = []
    for bench in result.benchmarks:
        rows: list[ChartRow] = []
        for m in result.mechanisms:
            if not m.available:
                rows.append((m.label, None, "", "unavailable"))
                continue
            cell = result.cell(bench, m.mechanism)
            if cell is None:
                continue
            est = cell.steady_performance
            text = fmt.estimate(est, result.metric)
            if m.mechanism == base and est:
                text += "  (baseline)"
            elif cell.ratio:
                text += "  " + fmt.ratio(cell.ratio, precise=result.metric == INSTRUCTIONS)
            rows.append((m.label, est, _class_colours(cell.classification)[1],
                         text if est else "no steady performance"))
        base_cell = result.cell(bench, base) if base else None
        reference = base_cell.steady_performance if base_cell else None
        chart = interval_chart(rows, reference=reference.value if reference else None,
                               label=f"{bench}: steady performance per mechanism", metric=result.metric)
        figures.append(f"<figure><figcaption><b>{escape(bench)}</b></figcaption>{chart}</figure>")
    note = (f"Bars: steady performance ({_per_iteration(result)}, per call when batched); whiskers: its {pct} "
            "CI; bar colour: class; dashed line: the baseline.")
    return (f'<section id="comparison"><h2>Comparison</h2><p class="note">{escape(note)}</p>'
            f'<div class="grid">{"".join(figures)}</div></section>')


def _problems(result: Analysis) -> str:
    out = []
    unavailable = tables.unavailable_rows(result)
    if unavailable:
        out.append("<h3>Unavailable mechanisms</h3>" + table(("Mechanism", "Reason"), unavailable))
    check = tables.check_problems(result)
    if check:
        out.append("<h3>Answer check problems</h3>" + table(("Benchmark", "Mechanism", "Status", "Detail"), check))
    failed = []
    for cell in result.cells:
        for f in cell.failures:
            shown = (f"<pre>{escape(f.stderr_tail)}</pre>" if f.stderr_tail.strip()
                     else '<span class="muted">(empty)</span>')
            failed.append((escape(cell.benchmark), escape(result.label(cell.mechanism)), escape(f.pexec + 1),
                           escape(f.status), escape(f.detail), shown))
    if failed:
        out.append("<h3>Failed process executions</h3>"
                   + table(("Benchmark", "Mechanism", "Process execution #", "Status", "Detail",
                             "Stderr (tail)"), failed, raw=True))
    if not out:
        return ""
    return '<section id="problems"><h2>Problems</h2>' + "".join(out) + "</section>"


def _per_iteration(result: Analysis) -> str:
    return "instructions per iteration" if result.metric == INSTRUCTIONS else "seconds per iteration"


def _signature_colours(runs: tuple[Run, ...]) -> dict[str, str]:
    """A colour per trace signature of a cell, in the order they first appear (grey past the palette)."""
    seen = list(dict.fromkeys(r.jit.signature for r in runs if r.jit))
    return {s: svg.PALETTE[i] if i < len(svg.PALETTE) else "#cccccc" for i, s in enumerate(seen)}


def _run_figure(bench: str, label: str, run: Run, series: Series, signature_colour: str = "") -> str:
    times = series.times(run)
    marks = run.outlier_mask()
    title = f"{bench}, {label}, process execution #{run.pexec + 1} ({run.kind or 'not classified'})"
    plot = line_plot(times, label=title, changepoints=run.changepoints, steady_start=run.steady_start,
                     segments=run.segments, marks=marks, metric=series.metric)
    extra = f" · {len(run.outliers)} outliers" if run.outliers else ""
    extra += f" · DISTURBED: {run.disturbed}" if run.disturbed else ""
    if run.stolen_iterations:
        extra += f" · {run.stolen_iterations} iterations lost over 10% of their time to others"
    style = ""
    if run.jit:  # LuaJIT's record: executions with the same signature get the same colour
        extra += (f" · JIT: signature {run.jit.signature}, {run.jit.traces} traces, {run.jit.aborts} aborts, "
                  f"{run.jit.mcode_bytes / 1024:.1f} KiB machine code")
        style = f' style="border-left:6px solid {signature_colour}"' if signature_colour else ""
    return (f'<figure class="run"{style}><figcaption>{escape(title)}<span class="muted">{escape(extra)}</span>'
            f"</figcaption>{plot}</figure>")


def _runs(result: Analysis, series: Series) -> str:
    out = ['<section id="runs"><h2>Run-sequence plots</h2><p class="note">Every successful process '
           f"execution: {_per_iteration(result)} (per call when batched). Shaded: the steady state; "
           "horizontal lines: segment means (green steady, orange not); dashed red lines: changepoints; "
           "red circles: outliers (left out of the analysis); triangles: points beyond the plotted range "
           "(red: outliers).</p>"]
    by_bench: dict[str, list[Cell]] = {}
    for cell in result.cells:
        by_bench.setdefault(cell.benchmark, []).append(cell)
    for bench, cells in by_bench.items():
        out.append(f"<h3>{escape(bench)}</h3>")
        for cell in cells:
            label = result.label(cell.mechanism)
            head = f"{bench}, {label}: {tables.class_text(cell)}"
            if not cell.per_execution:
                out.append(f'<p class="muted">{escape(head)} — no successful process execution to plot.</p>')
                continue
            colours = _signature_colours(cell.per_execution)
            figures = "".join(_run_figure(bench, label, run, series, colours.get(run.jit.signature, "") if run.jit
                                          else "") for run in cell.per_execution)
            if cell.jit:
                head += f" · JIT: {cell.jit.words()}"
            bg = _class_colours(cell.classification)[0]
            out.append(f'<details open><summary style="background:{bg}">{escape(head)}</summary>'
                       f'<div class="grid">{figures}</div></details>')
    out.append("</section>")
    return "".join(out)


def _machines(result: Analysis) -> str:
    """With more than one machine: which ran what, and whether they agree cell by cell."""
    if not result.machines:
        return ""
    return ('<section id="machines"><h2>Machines</h2><p class="note">The campaign\'s process executions ran on '
            "more than one machine. Consistent: no two machines' shares of a cell differ by the differ's rules; "
            "distinguishable: some do, and the cell's figures mix machines.</p>"
            + table(tables.MACHINE_COLUMNS, tables.machine_rows(result))
            + table(tables.MACHINE_CELL_COLUMNS, tables.machine_cell_rows(result)) + "</section>")


def _machine(result: Analysis) -> str:
    env = result.campaign.environment
    keys = [k for k in tables.ENVIRONMENT_KEYS if k in env] + sorted(k for k in env if k not in
                                                                   tables.ENVIRONMENT_KEYS)

    def show(v: Any) -> str:
        if isinstance(v, list | tuple):
            return ", ".join(f"{x:.2f}" if isinstance(x, float) else str(x) for x in v)
        return "—" if v is None else str(v)

    env_table = table(("What", "Value"), [(k, show(env[k])) for k in keys])
    mechs = table(("Mechanism", "Label", "Available", "Version", "Build hash"),
                  [(m.mechanism, m.label, "yes" if m.available else "no", m.version or "—",
                    (m.build_hash or "—")[:16]) for m in result.mechanisms])
    opt_table = table(("Option", "Value"), [(k, show(v)) for k, v in result.campaign.options.items()])
    return (f'<section id="machine"><h2>Machine and mechanisms</h2><h3>Environment</h3>{env_table}'
            f"<h3>Mechanism versions</h3>{mechs}<h3>Campaign options</h3>{opt_table}</section>")


def render(result: Analysis, series: Series) -> str:
    """The whole report as one HTML document."""
    c = result.campaign
    problems = _problems(result)
    verdicts = _verdicts(result)
    nav = ('<nav>' + ('<a href="#verdicts">Verdicts</a>' if verdicts else "")
           + '<a href="#summary">Steady state</a><a href="#comparison">Comparison</a>'
           + ('<a href="#problems">Problems</a>' if problems else "")
           + '<a href="#runs">Run-sequence plots</a><a href="#machine">Machine</a></nav>')
    # the answer first: the headline, then the forest plot; what the campaign was comes after them
    body = "".join((_title(result), nav, verdicts, _header(result), _summary(result), _comparison(result),
                    problems, _machines(result), _runs(result, series), _machine(result)))
    return page(f"bridgebench: {c.study}, campaign {c.id}", body)
