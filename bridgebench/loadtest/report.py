"""The report of a load campaign, from its analysis only: markdown (also what the terminal prints), a
self-contained HTML page with an HdrHistogram-style percentile plot per phase and a latency-vs-rate plot,
and JSON."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable

from rich.console import Console

from bridgebench import question
from bridgebench.loadtest.analysis import LIMITED_BY_DRIVER, PERCENTILES
from bridgebench.loadtest.phases import SATURATION
from bridgebench.loadtest.result import LoadAnalysis, LoadCell
from bridgebench.report import html as page_html
from bridgebench.report import speed, svg, terminal
from bridgebench.report.fmt import DASH, NO_INTERVAL, duration
from bridgebench.report.markdown import headline as md_headline
from bridgebench.report.markdown import table as md_table
from bridgebench.stats import Estimate

# The palette's colours for several servers' lines, blue and red first: the two most often drawn, told apart.
COLOURS = tuple(svg.PALETTE[i] for i in (0, 3, 2, 4, 1, 5, 6, 9))


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}".replace(",", " ")


def _fig(f: Estimate | None, show: Callable[[float], str]) -> str:
    if f is None:
        return "—"
    if f.low is None or f.high is None:
        return f"{show(f.value)} ({NO_INTERVAL})"
    return f"{show(f.value)} ({show(max(f.low, 0.0))}{DASH}{show(f.high)})"


def _ms(seconds: float) -> str:
    return duration(seconds)


def _errors(cell: LoadCell) -> str:
    """Transport errors by kind (HTTP statuses are in their own column: a 400 may be the expected answer)."""
    return ", ".join(f"{k}: {v}" for k, v in sorted(cell.errors.items()) if v) or "none"


def _statuses(cell: LoadCell) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(cell.statuses.items())) or "—"


def _limited(a: LoadAnalysis, mechanism: str) -> bool:
    cell = a.cell(SATURATION, mechanism)
    return cell is not None and cell.driver_limited


def _flags(cell: LoadCell) -> str:
    """What holds a row's figures back: the driver's ceiling, or cores shared with the driver."""
    out = []
    if cell.driver_limited and cell.ceiling_share is not None:
        out.append(f"limited by the driver ({cell.ceiling_share:.0%} of its ceiling)")
    if cell.contended:
        out.append("contended (shares cores with the driver)")
    return "; ".join(out)


def _label(a: LoadAnalysis, cell: LoadCell, by_name: bool = False) -> str:
    """The server's label (or, `by_name`, its shorter name in the study file) and what holds its row back."""
    flags = [f for f, on in (("driver-limited", cell.driver_limited), ("contended", cell.contended)) if on]
    return (cell.mechanism if by_name else a.label(cell.mechanism)) + (f" [{', '.join(flags)}]" if flags else "")


def headline_lines(a: LoadAnalysis) -> list[str]:
    """The study's question answered in words, as a timing report's first lines are (question.py): each
    server against the baseline at saturation, in time per request (faster: it answers more a second), unless
    either is held back by the driver; and each server's CPU per request against the baseline's."""
    lines = []
    for r in a.ratios:
        if r.a == a.baseline:  # the baseline's rate over the server's: the server's time per request over its
            if _limited(a, r.a) or _limited(a, r.b):
                lines.append(f"{a.label(r.b)} vs {a.label(r.a)} at saturation: not compared, the driver's "
                             "ceiling holds one of them back (see the CPU per request)")
                continue
            verdict = question.answer(r.ratio, a.equivalence, a.min_runs)
            lines.append(f"{a.label(r.b)} vs {a.label(r.a)} at saturation: {verdict.state} ({verdict.why}, in "
                         f"time per request, {a.confidence:.0%})")
    for r in a.cpu_ratios:
        verdict = question.answer(r.ratio, a.equivalence, a.min_runs)
        mine, theirs = a.cell(a.cpu_phase or "", r.a), a.cell(a.cpu_phase or "", r.b)
        us = (f"{mine.server_us.value:.2f} vs {theirs.server_us.value:.2f} µs, " if mine and theirs and
              mine.server_us and theirs.server_us else "")
        lines.append(f"{a.label(r.a)} vs {a.label(r.b)}, server CPU a request at {a.cpu_phase}: {us}"
                     f"{verdict.state} ({verdict.why}, {a.confidence:.0%})")
    return lines


def _budget(a: LoadAnalysis) -> str:
    o, load = a.campaign.options, a.setup
    reqs = ", ".join(f"{r.name} ×{r.weight} ({r.method} {r.path})" for r in load.requests)
    pinned = f"; the driver pinned to CPUs {load.driver_cpus}" if load.driver_cpus else ""
    return (f"{o['process_executions']} process executions of each phase and server (the server started afresh "
            f"for each), {o['warmup_s']:g} s of warm-up (sent, not recorded) then {o['duration_s']:g} s recorded, "
            f"{load.connections} keep-alive connections{pinned}. Requests in the mix: {reqs}. Latency is "
            "timed from each request's intended send time; a request unanswered when the run ends is recorded "
            "at its latency so far (censored), never dropped.")


def _us(f: Estimate | None) -> str:
    return _fig(f, lambda v: f"{v:.2f} µs")


def _lost(cell: LoadCell) -> str:
    """Answers missing from the server's own counts (summed over runs), and what it says it lost."""
    if cell.totals_errors:
        return f"totals unread in {len(cell.totals_errors)} run(s): {cell.totals_errors[0]}"
    if cell.lost is None:
        return "—"
    own = ", ".join(f"{k} {v}" for k, v in sorted(cell.server_lost.items()) if v)
    return f"{cell.lost}" + (f" ({own})" if own else "")


def _ceiling_line(a: LoadAnalysis) -> str | None:
    if a.ceiling is None:
        return None
    rate = _fig(a.ceiling_rate, _rate)
    return (f"The driver's ceiling: {a.label(a.ceiling)} answers {rate} req/s at saturation. A server within "
            f"{LIMITED_BY_DRIVER:.0%} of it is marked as limited by the driver: its saturation figure may be the "
            "driver's, and saturation ratios with it are not verdicts. Rows marked contended share cores with the "
            "driver (this machine has too few to keep them apart): they measure the two together.")


def _adaptive_line(a: LoadAnalysis) -> str | None:
    b = a.adaptive
    if b is None:
        return None
    states = ", ".join(f"{state} {n}" for state, n in sorted(b.states.items()))
    return (f"Adaptive budget: after its first {b.first_process_executions} runs, a cell got more until its "
            f"achieved rate and its server CPU per request were known within ±{b.until_ci:.1%} (99 % CI "
            f"half-width), at most {b.max_process_executions} runs a cell, within {b.max_time_s:g} s of runs in "
            f"all. After {b.rounds} round(s): {states} (see Adaptive budget).")


def _adaptive_rows(a: LoadAnalysis) -> list[list[str]]:
    return [[c.phase, a.label(c.mechanism), str(c.ok), c.adaptive.state, c.adaptive.reason] for c in a.cells
            if c.adaptive is not None]


def _warnings(a: LoadAnalysis) -> list[str]:
    out = []
    total = sum(c.ok for c in a.cells)
    if a.disturbed:
        out.append(f"{a.disturbed} of {total} load runs were disturbed (others or steal above the audit's "
                   "thresholds while they ran): their figures include what the machine did besides; see "
                   "Disturbed.")
    if a.failed:
        out.append(f"{a.failed} load runs failed (see Failures); their cells have fewer executions.")
    if a.campaign.state != "done":
        out.append(f"The campaign is {a.campaign.state}: {a.campaign.executions_stored} of "
                   f"{a.campaign.executions_planned} load runs are stored.")
    return out


def _check_rows(a: LoadAnalysis) -> list[list[str]]:
    return [[r.benchmark.removeprefix("request:"), a.label(r.mechanism), r.status, r.answer or "—", r.detail or ""]
            for r in a.check]


def _saturation_rows(a: LoadAnalysis) -> list[list[str]]:
    rows = []
    for c in a.cells:
        if c.phase != SATURATION:
            continue
        share = "—" if c.ceiling_share is None else f"{c.ceiling_share:.0%}"
        rows.append([a.label(c.mechanism), _fig(c.achieved, _rate), share, _us(c.server_us),
                     _fig(c.latency.get("p50"), _ms), _fig(c.latency.get("p99"), _ms), _lost(c), _statuses(c),
                     _errors(c), f"{c.ok}/{c.planned}", str(len(c.disturbed)), _flags(c) or "—"])
    return rows


def _ratio_ci(e: Estimate) -> str:
    return "" if e.low is None or e.high is None else f" ({e.low:.3f}{DASH}{e.high:.3f})"


def _ratio_rows(a: LoadAnalysis) -> list[list[str]]:
    rows = []
    servers = [m.mechanism for m in a.mechanisms]
    for r in a.ratios:
        if servers.index(r.a) > servers.index(r.b):
            continue  # each pair once, in the study's order
        e = r.ratio
        ci = _ratio_ci(e)
        verdict = (NO_INTERVAL if e.low is None or e.high is None else
                   "different" if e.low > 1 or e.high < 1 else "not told apart")
        if _limited(a, r.a) or _limited(a, r.b):
            verdict = "no verdict: limited by the driver"
        rows.append([f"{a.label(r.a)} / {a.label(r.b)}", f"×{e.value:.3f}{ci}", verdict])
    return rows


def _cpu_rows(a: LoadAnalysis) -> list[list[str]]:
    rows = []
    for r in a.cpu_ratios:
        e = r.ratio
        ci = _ratio_ci(e)
        mine, theirs = a.cell(a.cpu_phase or "", r.a), a.cell(a.cpu_phase or "", r.b)
        extra = (f"{mine.server_us.value - theirs.server_us.value:+.2f} µs" if mine and theirs and mine.server_us
                 and theirs.server_us else "—")
        rows.append([f"{a.label(r.a)} / {a.label(r.b)}", f"×{e.value:.3f}{ci}", extra,
                     question.answer(e, a.equivalence, a.min_runs).state])
    return rows


def _rate_rows(a: LoadAnalysis) -> list[list[str]]:
    rows = []
    for c in a.cells:
        if c.fraction is None or c.fraction > 1:  # saturation and overload have their own tables
            continue
        rows.append([c.phase, _label(a, c), _rate(c.intended_rate), _fig(c.achieved, _rate), _us(c.server_us),
                     *(_fig(c.latency.get(p), _ms) for p in PERCENTILES),
                     str(c.censored), _lost(c), _statuses(c), _errors(c), f"{c.ok}/{c.planned}",
                     str(len(c.disturbed))])
    return rows


def _overload_rows(a: LoadAnalysis) -> list[list[str]]:
    rows = []
    for c in a.cells:
        p = c.prediction
        if p is None:
            continue
        measured = c.merged
        rows.append([_label(a, c), _rate(p.intended_rate), _rate(p.saturation_rate), _fig(c.achieved, _rate),
                     _ms(measured.get("p50", math.nan)), _ms(p.p50_s), _ms(measured.get("max", math.nan)), _ms(p.max_s),
                     f"{_ms(p.formula_p50_s)} / {_ms(p.formula_max_s)}", str(c.censored), _lost(c)])
    return rows


def _problem_rows(a: LoadAnalysis) -> list[list[str]]:
    return [[c.phase, a.label(c.mechanism), f"execution {f.pexec + 1}: {f.status}: {f.detail}"] for c in a.cells
            for f in c.failures]


def _disturbed_rows(a: LoadAnalysis) -> list[list[str]]:
    return [[c.phase, a.label(c.mechanism), line] for c in a.cells for line in c.disturbed]


SECTIONS: tuple[tuple[str, str, list[str], Callable[[LoadAnalysis], list[list[str]]]], ...] = (
    ("check", "Answer check: the status each server gives each request, before anything is timed", [
        "request", "server", "check", "status", "detail"], _check_rows),
    ("saturation", "Saturation (closed loop): how many requests a second each server answers", [
        "server", "req/s (99% CI)", "of the ceiling", "server CPU/request", "p50", "p99", "counts lost",
        "HTTP statuses", "errors", "runs", "disturbed", "held back by"], _saturation_rows),
    ("ratios", "Saturation ratios (99% CI: Welch's t on the log ratio, over process executions)", [
        "A / B", "ratio", "verdict"], _ratio_rows),
    ("cpu", "Server CPU per request against the baseline, at the lightest constant rate (99% CI: Welch's t on "
     "the log ratio, over process executions)", ["A / B", "ratio", "difference", "verdict"], _cpu_rows),
    ("rates", "Constant rates: latency from each request's intended send time (mean over process executions, "
     "99% CI)", ["phase", "server", "target req/s", "achieved req/s", "server CPU/request", *PERCENTILES,
                 "censored", "counts lost", "HTTP statuses", "errors", "runs", "disturbed"], _rate_rows),
    ("overload", "Overload: the seed's method (a target above saturation), and what throughput alone predicts", [
        "server", "target req/s", "saturation X", "achieved req/s", "p50 measured", "p50 predicted", "max measured",
        "max predicted", "seed's formula p50 / max", "censored", "counts lost"], _overload_rows),
    ("adaptive", "Adaptive budget: how each cell ended", ["phase", "server", "runs", "state", "why"],
     _adaptive_rows),
    ("failures", "Failures", ["phase", "server", "what happened"], _problem_rows),
    ("disturbed", "Disturbed load runs", ["phase", "server", "why"], _disturbed_rows),
)

def informative(columns: list[str] | tuple[str, ...], rows: list[list[str]] | list[tuple[str, ...]]
                ) -> tuple[list[str], list[list[str]]]:
    """The columns some row has a figure in: a campaign without a ceiling server or a server's own totals
    (or one recorded before they were measured) is not shown columns of dashes."""
    keep = [i for i in range(len(columns)) if any(row[i] != "—" for row in rows)]
    return [columns[i] for i in keep], [[row[i] for i in keep] for row in rows]


OVERLOAD_NOTE = (
    "Above saturation the server answers X requests a second while R a second are due, so the request due at t "
    "waits t(R/X - 1): its latency is fixed by X, R and the run's length, not by anything else the server "
    "does. *Predicted* applies that to this driver (warm-up not recorded, unanswered requests censored at the "
    "end, X from the saturation phase); the seed's formula is the same model for completed requests from the "
    "run's start: p50 = (T/2)(1 - X/R), max = T(1 - X/R), T the run's length. Where measured and predicted "
    "agree, the latencies carry no information beyond the throughput.")


def markdown(a: LoadAnalysis) -> str:
    c = a.campaign
    out = [f"# {c.study}: load campaign {c.id}", ""]
    out += md_headline(headline_lines(a))
    out += [_budget(a), ""]
    for line in (_adaptive_line(a), _ceiling_line(a), speed.line(a.campaign)):
        if line:
            out += [line, ""]
    out += [f"> **Warning:** {w}" for w in _warnings(a)]
    out += [f"Machine: {c.machine}; git {c.git_sha[:12]}; started "
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(c.created))} UTC.", ""]
    for key, title, columns, rows_of in SECTIONS:
        rows = rows_of(a)
        if not rows:
            continue
        shown, rows = informative(columns, rows)
        out += [f"## {title}", "", *md_table(tuple(shown), [tuple(r) for r in rows])]
        if key == "overload":
            out += [OVERLOAD_NOTE, ""]
    unavailable = [m for m in a.mechanisms if not m.available]
    if unavailable:
        out += ["## Unavailable servers", ""] + [f"- {m.label}: {m.reason}" for m in unavailable] + [""]
    return "\n".join(out)


def to_json(a: LoadAnalysis) -> str:
    return json.dumps(a.to_json(), indent=2, sort_keys=True) + "\n"


# --- HTML --------------------------------------------------------------------------------------------
W, H, L, R, T, B = 560, 300, 64, 150, 14, 40


def _decade(seconds: float) -> str:
    """A power of ten of seconds as 1 µs, 10 µs … 1 s, 10 s."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale * 0.999:
            return f"{seconds / scale:.0f} {unit}"
    return f"{seconds:g} s"


def _svg(label: str, body: list[str]) -> str:
    return svg.start(W, H, label) + "".join(body) + svg.END


def _y_log(values: list[float]) -> tuple[Callable[[float], float], list[str]]:
    lo, hi = min(values), max(values)
    lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    if hi <= lo:
        hi = lo * 10

    def y(v: float) -> float:
        return H - B - (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (H - B - T)
    parts = []
    for t in svg.log_ticks(lo, hi):
        if lo <= t <= hi:
            parts.append(f'<path d="M{L} {y(t):.1f}H{W - R}" stroke="#e6e6e6"/><text x="{L - 6}" y="{y(t) + 4:.1f}" '
                         f'text-anchor="end">{_decade(t)}</text>')
    return y, parts


def percentile_plot(a: LoadAnalysis, phase: str) -> str:
    """Latency against percentile, the x axis log-scaled in 1/(1 - q) as HdrHistogram plots are."""
    cells = [c for c in a.cells if c.phase == phase and c.distribution]
    values = [v for c in cells for _, v in c.distribution if v > 0]
    if not values:
        return ""
    y, parts = _y_log(values)
    max_x = 5.0  # 99.999 %

    def x(q: float) -> float:
        nines = min(max_x, -math.log10(max(1 - q / 100, 10 ** -max_x)))
        return L + nines / max_x * (W - L - R)
    for k, name in enumerate(("0%", "90%", "99%", "99.9%", "99.99%", "99.999%")):
        xk = L + k / max_x * (W - L - R)
        parts.append(f'<path d="M{xk:.1f} {T}V{H - B + 4}" stroke="#e6e6e6"/><text x="{xk:.1f}" y="{H - B + 16}" '
                     f'text-anchor="middle">{name}</text>')
    parts.append(f'<text x="{W - R}" y="{H - 4}" text-anchor="end">percentile</text>')
    for k, c in enumerate(cells):
        colour = COLOURS[k % len(COLOURS)]
        points = " ".join(f"{x(q):.1f},{y(v):.1f}" for q, v in c.distribution if q < 100 and v > 0)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        parts.append(f'<text x="{W - R + 8}" y="{T + 14 * k + 8}" fill="{colour}">'
                     f"{svg.escape(c.mechanism)}</text>")
    parts.append(f'<path d="M{L} {T}V{H - B}H{W - R}" fill="none" stroke="#888"/>')
    return _svg(f"latency by percentile, {phase}", parts)


def rate_plot(a: LoadAnalysis) -> str:
    """p50 (dashed) and p99 (solid) latency against the achieved rate, one line per server."""
    servers = list(dict.fromkeys(c.mechanism for c in a.cells))
    series = {m: sorted((c.achieved.value, c.latency["p50"].value, c.latency["p99"].value) for c in a.cells
                        if c.mechanism == m and c.fraction is not None and c.fraction <= 1 and c.achieved
                        and "p50" in c.latency and "p99" in c.latency) for m in servers}
    values = [v for pts in series.values() for p in pts for v in p[1:] if v > 0]
    rates = [p[0] for pts in series.values() for p in pts]
    if not values or not rates:
        return ""
    y, parts = _y_log(values)
    top = max(rates) * 1.05

    def x(r: float) -> float:
        return L + r / top * (W - L - R)
    for t in svg.nice_ticks(0, top, 5):
        if t <= top:
            parts.append(f'<path d="M{x(t):.1f} {T}V{H - B + 4}" stroke="#e6e6e6"/><text x="{x(t):.1f}" '
                         f'y="{H - B + 16}" text-anchor="middle">{_rate(t)}</text>')
    parts.append(f'<text x="{W - R}" y="{H - 4}" text-anchor="end">achieved requests/s</text>')
    for k, m in enumerate(servers):
        colour = COLOURS[k % len(COLOURS)]
        for index, dash in ((1, ' stroke-dasharray="4 3"'), (2, "")):
            points = " ".join(f"{x(p[0]):.1f},{y(p[index]):.1f}" for p in series[m])
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.6"{dash}/>')
        parts.append(f'<text x="{W - R + 8}" y="{T + 14 * k + 8}" fill="{colour}">'
                     f"{svg.escape(m)}</text>")
    parts.append(f'<path d="M{L} {T}V{H - B}H{W - R}" fill="none" stroke="#888"/>')
    return _svg("p50 and p99 latency against achieved rate", parts)


def html(a: LoadAnalysis) -> str:
    c = a.campaign
    e = svg.escape
    body = [f"<h1>{e(c.study)}: load campaign {c.id}</h1>"]
    body += [f'<p class="headline">{e(line)}</p>' for line in headline_lines(a)]
    body.append(f'<p class="budget">{e(_budget(a))}</p>')
    for line in (_adaptive_line(a), _ceiling_line(a), speed.line(a.campaign)):
        if line:
            body.append(f'<p class="note">{e(line)}</p>')
    body += [f'<div class="warning">{e(w)}</div>' for w in _warnings(a)]
    for key, title, columns, rows_of in SECTIONS:
        rows = rows_of(a)
        if not rows:
            continue
        shown, rows = informative(columns, rows)
        body.append(f'<h2 id="{key}">{e(title)}</h2>')
        body.append(page_html.table(shown, rows))
        if key == "overload":
            body.append(f'<p class="note">{e(OVERLOAD_NOTE)}</p>')
        if key == "rates" and (plot := rate_plot(a)):
            body.append(f"<h3>Latency against rate</h3><figure>{plot}<figcaption>p50 dashed, p99 solid; each "
                        "point a constant-rate phase (mean over process executions)</figcaption></figure>")
    plots = [(p, figure) for p in a.phases if (figure := percentile_plot(a, p))]
    if plots:
        body.append('<h2 id="percentiles">Latency by percentile (every request of every run, histograms '
                    "merged)</h2><div class=\"grid\">")
        body += [f"<figure><figcaption>{e(p)}</figcaption>{figure}</figure>" for p, figure in plots]
        body.append("</div>")
    body.append(f'<p class="muted">Machine: {e(c.machine)}; git {e(c.git_sha[:12])}.</p>')
    return page_html.page(f"{c.study}: load campaign {c.id}", "".join(body))


FORMATS: dict[str, Callable[[LoadAnalysis], str]] = {"markdown": markdown, "html": html, "json": to_json}
SUFFIXES = {"markdown": "md", "html": "html", "json": "json"}


def show(a: LoadAnalysis, console: Console, wide: bool = False) -> None:
    """The terminal's summary: the figures without their intervals (those, the statuses and the errors are in
    the report files), so that it stays readable in 80 columns; the same with `wide`."""
    c = a.campaign
    console.print(f"[bold]{c.study}[/]: load campaign {c.id}", highlight=False)
    for line in headline_lines(a):
        console.print(line, highlight=False)
    for w in _warnings(a):
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    for line in (_adaptive_line(a), _ceiling_line(a), speed.line(a.campaign)):
        if line:
            console.print(line, highlight=False)
    def rows(by_name: bool) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        table = [(cell.phase, _label(a, cell, by_name), _rate(cell.intended_rate) if cell.fraction else "closed",
                  _rate(cell.achieved.value) if cell.achieved else "—",
                  f"{cell.server_us.value:.2f}" if cell.server_us else "—",
                  *(_ms(cell.latency[p].value) if p in cell.latency else "—" for p in ("p50", "p99")),
                  "—" if cell.lost is None else str(cell.lost), f"{cell.ok}/{cell.planned}") for cell in a.cells]
        columns, shown = informative(("phase", "server", "target/s", "achieved/s", "CPU µs/req", "p50", "p99",
                                      "lost", "runs"), table)
        return tuple(columns), [tuple(r) for r in shown]

    title = "Saturation and constant rates (means over process executions)"
    # on a terminal, one line a row: the servers' labels where they fit, else their names in the study file
    if not any(terminal.print_rows(console, title, *rows(by_name)) for by_name in (False, True)):
        terminal.print_table(console, title, *rows(False))
    for r in _ratio_rows(a):
        console.print(f"saturation {r[0]}: {r[1]} ({r[2]})", highlight=False)
    for cell in a.cells:
        p = cell.prediction
        if p is not None:
            console.print(f"overload, {a.label(cell.mechanism)}: p50 {_ms(cell.merged.get('p50', math.nan))} "
                          f"measured, {_ms(p.p50_s)} predicted from throughput alone; max "
                          f"{_ms(cell.merged.get('max', math.nan))} measured, {_ms(p.max_s)} predicted",
                          highlight=False)
    for phase, server, line in _problem_rows(a):
        console.print(f"[red]failed[/]: {phase} on {server}: {line}", highlight=False)
