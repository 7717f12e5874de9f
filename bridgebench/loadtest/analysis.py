"""What a load campaign measured (loadtest/result.py's LoadAnalysis): per server and phase, the achieved rate and
the latency percentiles as means over process executions with 99% Student-t intervals (stats.executions, as
timing campaigns' steady performance: no interval below 3 process executions), the same percentiles over
every request of every run (histograms merged), errors by kind, what the audit flagged; the saturation
ratios between servers; and, for a phase above saturation, what throughput alone predicts its latencies to
be. The result is cached in the store as a timing campaign's is (result.cached)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from bridgebench.loadtest import driver
from bridgebench.loadtest.phases import phases, saturation_rates
from bridgebench.loadtest.result import (
    LoadAnalysis,
    LoadCell,
    LoadRun,
    LoadSetup,
    Prediction,
    RequestMix,
    ServerRatio,
)
from bridgebench.options import LoadOptions, read
from bridgebench.result import BuiltMechanism, CampaignFacts, CheckAnswer, Failure, cached, with_decisions
from bridgebench.stats import Estimate
from bridgebench.stats.executions import over_executions, ratio_over_executions
from bridgebench.store import Store, StoredExecution
from bridgebench.study import DEFAULT_EQUIVALENCE, stored_load

CONFIDENCE = 0.99
PERCENTILES = ("p50", "p90", "p99", "p99.9", "max")
# A load run's figures move more between fresh servers than a timing execution's (p99 near saturation
# above all): an interval needs this many runs of a cell (issue #25), fewer get the mean alone.
MIN_RUNS = 5
# A server that reaches this share of the ceiling server's saturation may be held back by the driver.
LIMITED_BY_DRIVER = 0.8


def figure(values: list[float]) -> Estimate | None:
    """A mean over process executions, with its 99% Student-t interval where there are enough of them."""
    return over_executions(values, confidence=CONFIDENCE, scale="linear", min_executions=MIN_RUNS)


def ratio(a: str, xa: list[float], b: str, xb: list[float]) -> ServerRatio | None:
    """a's saturation rate over b's."""
    if not xa or not xb or min(xa) <= 0 or min(xb) <= 0:
        return None
    return ServerRatio(a, b, ratio_over_executions(xb, xa, confidence=CONFIDENCE, min_executions=MIN_RUNS))


def cpu_set(cpus: str | None) -> set[int] | None:
    """The CPUs of a taskset list ("0-1,3"); None for no list (anywhere)."""
    if not cpus:
        return None
    out: set[int] = set()
    for part in cpus.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def contended(server_cpus: str | None, driver_cpus: str | None) -> bool:
    """Whether a server and the driver may share a core: their CPU lists overlap, or either is unpinned."""
    server, driver_ = cpu_set(server_cpus), cpu_set(driver_cpus)
    return server is None or driver_ is None or bool(server & driver_)


def widest(cell: LoadCell) -> Estimate | None:
    """What an adaptive load budget judges a cell by: the less certain of its achieved rate and its server
    CPU per request (the figures its headline compares); latency percentiles are reported, not chased."""
    figures = [f for f in (cell.achieved, cell.server_us) if f is not None]
    if not figures:
        return None
    if any(not f.has_interval for f in figures):
        return next(f for f in figures if not f.has_interval)
    return max(figures, key=lambda f: (f.high - f.low) / f.value if f.value and f.high is not None
               and f.low is not None else float("inf"))


def server_us(result: dict[str, Any]) -> float | None:
    """The server's CPU per answered request, in µs, over the whole run (its CPU is sampled over it all)."""
    cpu, answered = result.get("server_cpu_s"), result.get("answered") or 0
    return cpu / answered * 1e6 if cpu is not None and answered > 0 else None


def predict(intended: float, saturation: float, warmup_s: float, duration_s: float) -> Prediction:
    total = warmup_s + duration_s
    due = np.linspace(warmup_s, total, 200_001)
    answered_at = due * intended / saturation
    latency = np.where(answered_at <= total, answered_at - due, total - due)
    share = max(0.0, 1 - saturation / intended)
    return Prediction(intended, saturation, total, warmup_s, float(np.percentile(latency, 50)),
                      float(latency.max()), total / 2 * share, total * share)


def _lost(result: dict[str, Any]) -> int | None:
    got = result.get("totals")
    return got["lost"] if isinstance(got, dict) and "lost" in got else None


def _run(execution: StoredExecution, result: dict[str, Any]) -> LoadRun:
    return LoadRun(execution.id, execution.pexec, result.get("intended_rate") or None, result["achieved_rate"],
                   dict(result["latency"]), result["sent"], result["completed"], result["censored"],
                   execution.disturbed, server_us(result), _lost(result))


def _summed_totals(results: list[dict[str, Any]]) -> tuple[int | None, dict[str, int], tuple[str, ...]]:
    """Summed over runs: answers missing from the server's counts, what it says it lost, and the runs whose
    totals could not be read."""
    counted = [r["totals"] for r in results if isinstance(r.get("totals"), dict)]
    errors = tuple(t["error"] for t in counted if "error" in t)
    checked = [t for t in counted if "lost" in t]
    own: dict[str, int] = {}
    for t in checked:
        for why, n in t.get("server_lost", {}).items():
            own[why] = own.get(why, 0) + n
    return (sum(t["lost"] for t in checked) if checked else None), own, errors


def _cell(phase: str, fraction: float | None, mechanism: str, planned: int, runs: list[StoredExecution],
          options: LoadOptions, saturation: float | None, ceiling: float | None, is_contended: bool) -> LoadCell:
    ok = [r for r in runs if r.status == "ok" and r.info_json]
    results = [json.loads(r.info_json) for r in ok if r.info_json]
    failures = tuple(Failure(r.pexec, r.status, r.detail, r.stderr_tail[-500:]) for r in runs if r not in ok)
    disturbed = tuple(f"execution {r.pexec + 1}: {r.disturbed}" for r in ok if r.disturbed)
    merged = driver.merge(results) if results else None
    prediction = None
    intended = float(np.mean([r["intended_rate"] for r in results])) if results and fraction else None
    if intended and saturation and fraction and fraction > 1:
        prediction = predict(intended, saturation, options.warmup_s, options.duration_s)
    achieved = figure([r["achieved_rate"] for r in results])
    # what the driver was asked for or gave, whichever is more: a target above its ceiling is its limit too
    share = max(achieved.value, intended or 0.0) / ceiling if achieved and ceiling else None
    lost, server_lost, totals_errors = _summed_totals(results)
    return LoadCell(
        phase=phase, mechanism=mechanism, fraction=fraction, planned=planned, ok=len(ok), failures=failures,
        disturbed=disturbed, intended_rate=intended,
        achieved=achieved,
        latency={p: f for p in PERCENTILES if (f := figure([r["latency"][p] for r in results if p in r["latency"]]))},
        merged={p: merged["latency"][p] for p in PERCENTILES if merged and p in merged["latency"]},
        service={p: merged["service"][p] for p in PERCENTILES if merged and p in merged["service"]},
        lag={p: merged["lag"][p] for p in PERCENTILES if merged and p in merged["lag"]},
        sent=sum(r["sent"] for r in results), completed=sum(r["completed"] for r in results),
        censored=sum(r["censored"] for r in results),
        errors=merged["errors"] if merged else {}, statuses=merged["statuses"] if merged else {},
        distribution=tuple((float(q), float(v)) for q, v in merged.get("distribution") or []) if merged else (),
        per_execution=tuple(_run(e, r) for e, r in zip(ok, results, strict=True)),
        prediction=prediction,
        server_us=figure([u for r in results if (u := server_us(r)) is not None]),
        lost=lost, server_lost=server_lost, totals_errors=totals_errors,
        ceiling_share=share, driver_limited=share is not None and share >= LIMITED_BY_DRIVER,
        contended=is_contended)


def analyse(store: Store, campaign_id: int) -> LoadAnalysis:
    campaign = store.campaign(campaign_id)
    config = read(campaign)
    assert isinstance(config.options, LoadOptions)
    options = config.options
    load = stored_load(config.study, Path(campaign.study_path))
    phase_list = phases(load)
    executions = store.executions(campaign_id)
    planned = store.planned(campaign_id)
    builds = tuple(BuiltMechanism(**b) for b in store.builds(campaign_id))
    servers = [m for m in options.mechanisms if any(b.mechanism == m and b.available for b in builds)]
    saturation = saturation_rates(executions)
    ceiling = load.ceiling if load.ceiling in servers else None
    ceiling_rate = figure(saturation.get(ceiling, [])) if ceiling else None
    raw_mechanisms = config.study.get("mechanisms", {})
    cells = []
    for phase in phase_list:
        for mechanism in servers:
            if mechanism == ceiling and phase.fraction is not None:
                continue  # the ceiling runs at saturation only
            runs = [e for e in executions if e.benchmark == phase.name and e.mechanism == mechanism]
            count = sum(1 for t in planned if t.benchmark == phase.name and t.mechanism == mechanism)
            sat = saturation.get(mechanism)
            cells.append(_cell(phase.name, phase.fraction, mechanism, count, runs, options,
                               float(np.mean(sat)) if sat else None,
                               ceiling_rate.value if ceiling_rate else None,
                               contended(raw_mechanisms.get(mechanism, {}).get("cpus"), load.driver_cpus)))
    compared = [m for m in servers if m != ceiling]
    ratios = tuple(r for a in compared for b in compared if a != b
                   if (r := ratio(a, saturation.get(a, []), b, saturation.get(b, []))))
    cells, adaptive = with_decisions(store, campaign_id, options.adaptive, cells)
    baseline = config.baseline if config.baseline in compared else (compared[0] if compared else None)
    lightest = min((p for p in phase_list if p.fraction is not None), key=lambda p: p.fraction or 0, default=None)
    cpu_ratios = _cpu_ratios(lightest.name, baseline, compared, cells) if lightest and baseline else ()
    return LoadAnalysis(
        campaign=CampaignFacts.of(campaign, len(planned), len(executions), store),
        confidence=CONFIDENCE,
        baseline=baseline,
        mechanisms=builds,
        check=tuple(CheckAnswer(**r) for r in store.check_answers(campaign_id)),
        setup=LoadSetup(load.connections, tuple(load.fractions), load.overload, load.driver_cpus,
                        tuple(RequestMix(r.name, r.weight, r.method, r.path, r.expect_status)
                              for r in load.requests)),
        phases=tuple(p.name for p in phase_list),
        cells=tuple(cells),
        ratios=ratios,
        equivalence=config.study["study"].get("equivalence", DEFAULT_EQUIVALENCE),
        ceiling=ceiling,
        ceiling_rate=ceiling_rate,
        min_runs=MIN_RUNS,
        cpu_phase=lightest.name if cpu_ratios and lightest else None,
        cpu_ratios=cpu_ratios,
        adaptive=adaptive,
    )


def _cpu_ratios(phase: str, baseline: str, servers: list[str], cells: list[LoadCell]
                ) -> tuple[ServerRatio, ...]:
    """Each server's CPU per request over the baseline's in one phase (a: the server, b: the baseline;
    Welch's t on the logs, over the cells' runs)."""
    per_server = {c.mechanism: [r.server_us for r in c.per_execution if r.server_us]
                  for c in cells if c.phase == phase}
    base = per_server.get(baseline, [])
    return tuple(ServerRatio(m, baseline, ratio_over_executions(base, per_server[m], confidence=CONFIDENCE,
                                                                 min_executions=MIN_RUNS))
                 for m in servers if m != baseline and base and per_server.get(m))


def current(store: Store, campaign_id: int) -> LoadAnalysis:
    """The stored analysis of a load campaign; recomputed (and stored) only if runs were added since, or it
    was written by another version of the result."""
    return cached(store, campaign_id, LoadAnalysis.from_json, lambda _stale: analyse(store, campaign_id),
                  lambda result: result.campaign.executions_stored == len(store.executions(campaign_id))
                  and len(result.campaign.speed) == len(store.speed_readings(campaign_id)))
