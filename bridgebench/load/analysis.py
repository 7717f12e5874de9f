"""What a load campaign measured (load/result.py's LoadAnalysis): per server and phase, the achieved rate and
the latency percentiles as means over process executions with 99% Student-t intervals (stats.executions, as
timing campaigns' steady performance: no interval below 3 process executions), the same percentiles over
every request of every run (histograms merged), errors by kind, what the audit flagged; the saturation
ratios between servers; and, for a phase above saturation, what throughput alone predicts its latencies to
be. The result is cached in the store as a timing campaign's is (analysis.cached)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from bridgebench.analysis import cached
from bridgebench.campaign.config import LoadOptions, read
from bridgebench.load import driver
from bridgebench.load.phases import phases, saturation_rates
from bridgebench.load.result import (
    LoadAnalysis,
    LoadCell,
    LoadRun,
    LoadSetup,
    Prediction,
    RequestMix,
    ServerRatio,
)
from bridgebench.result import CampaignFacts, CheckAnswer, Failure, Mechanism
from bridgebench.stats import Estimate
from bridgebench.stats.executions import over_executions, ratio_over_executions
from bridgebench.store import Store, StoredExecution
from bridgebench.study import DEFAULT_EQUIVALENCE, stored_load

CONFIDENCE = 0.99
PERCENTILES = ("p50", "p90", "p99", "p99.9", "max")


def figure(values: list[float]) -> Estimate | None:
    """A mean over process executions, with its 99% Student-t interval where there are enough of them."""
    return over_executions(values, confidence=CONFIDENCE, scale="linear")


def ratio(a: str, xa: list[float], b: str, xb: list[float]) -> ServerRatio | None:
    """a's saturation rate over b's."""
    if not xa or not xb or min(xa) <= 0 or min(xb) <= 0:
        return None
    return ServerRatio(a, b, ratio_over_executions(xb, xa, confidence=CONFIDENCE))


def predict(intended: float, saturation: float, warmup_s: float, duration_s: float) -> Prediction:
    total = warmup_s + duration_s
    due = np.linspace(warmup_s, total, 200_001)
    answered_at = due * intended / saturation
    latency = np.where(answered_at <= total, answered_at - due, total - due)
    share = max(0.0, 1 - saturation / intended)
    return Prediction(intended, saturation, total, warmup_s, float(np.percentile(latency, 50)),
                      float(latency.max()), total / 2 * share, total * share)


def _run(execution: StoredExecution, result: dict[str, Any]) -> LoadRun:
    return LoadRun(execution.id, execution.pexec, result.get("intended_rate") or None, result["achieved_rate"],
                   dict(result["latency"]), result["sent"], result["completed"], result["censored"],
                   execution.disturbed)


def _cell(phase: str, fraction: float | None, mechanism: str, planned: int, runs: list[StoredExecution],
          options: LoadOptions, saturation: float | None) -> LoadCell:
    ok = [r for r in runs if r.status == "ok" and r.info_json]
    results = [json.loads(r.info_json) for r in ok if r.info_json]
    failures = tuple(Failure(r.pexec, r.status, r.detail, r.stderr_tail[-500:]) for r in runs if r not in ok)
    disturbed = tuple(f"execution {r.pexec + 1}: {r.disturbed}" for r in ok if r.disturbed)
    merged = driver.merge(results) if results else None
    prediction = None
    intended = float(np.mean([r["intended_rate"] for r in results])) if results and fraction else None
    if intended and saturation and fraction and fraction > 1:
        prediction = predict(intended, saturation, options.warmup_s, options.duration_s)
    return LoadCell(
        phase=phase, mechanism=mechanism, fraction=fraction, planned=planned, ok=len(ok), failures=failures,
        disturbed=disturbed, intended_rate=intended,
        achieved=figure([r["achieved_rate"] for r in results]),
        latency={p: f for p in PERCENTILES if (f := figure([r["latency"][p] for r in results if p in r["latency"]]))},
        merged={p: merged["latency"][p] for p in PERCENTILES if merged and p in merged["latency"]},
        service={p: merged["service"][p] for p in PERCENTILES if merged and p in merged["service"]},
        lag={p: merged["lag"][p] for p in PERCENTILES if merged and p in merged["lag"]},
        sent=sum(r["sent"] for r in results), completed=sum(r["completed"] for r in results),
        censored=sum(r["censored"] for r in results),
        errors=merged["errors"] if merged else {}, statuses=merged["statuses"] if merged else {},
        distribution=tuple((float(q), float(v)) for q, v in merged.get("distribution") or []) if merged else (),
        per_execution=tuple(_run(e, r) for e, r in zip(ok, results, strict=True)),
        prediction=prediction)


def analyse(store: Store, campaign_id: int) -> LoadAnalysis:
    campaign = store.campaign(campaign_id)
    config = read(campaign)
    assert isinstance(config.options, LoadOptions)
    options = config.options
    load = stored_load(config.study, Path(campaign.study_path))
    phase_list = phases(load)
    executions = store.executions(campaign_id)
    planned = store.planned(campaign_id)
    builds = tuple(Mechanism(**b) for b in store.builds(campaign_id))
    servers = [m for m in options.mechanisms if any(b.mechanism == m and b.available for b in builds)]
    saturation = saturation_rates(executions)
    cells = []
    for phase in phase_list:
        for mechanism in servers:
            runs = [e for e in executions if e.benchmark == phase.name and e.mechanism == mechanism]
            count = sum(1 for t in planned if t.benchmark == phase.name and t.mechanism == mechanism)
            sat = saturation.get(mechanism)
            cells.append(_cell(phase.name, phase.fraction, mechanism, count, runs, options,
                               float(np.mean(sat)) if sat else None))
    ratios = tuple(r for a in servers for b in servers if a != b
                   if (r := ratio(a, saturation.get(a, []), b, saturation.get(b, []))))
    baseline = config.baseline if config.baseline in servers else (servers[0] if servers else None)
    return LoadAnalysis(
        campaign=CampaignFacts.of(campaign, len(planned), len(executions)),
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
    )


def current(store: Store, campaign_id: int) -> LoadAnalysis:
    """The stored analysis of a load campaign; recomputed (and stored) only if runs were added since, or it
    was written by another version of the result."""
    return cached(store, campaign_id, LoadAnalysis.from_json, lambda _stale: analyse(store, campaign_id),
                  lambda result: result.campaign.executions_stored == len(store.executions(campaign_id)))
