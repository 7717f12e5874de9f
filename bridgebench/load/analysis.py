"""What a load campaign measured: per server and phase, the achieved rate and the latency percentiles as
means over process executions with 99% Student-t intervals (stats.executions, as timing campaigns' steady
performance: no interval below 3 process executions), the same percentiles over every request of
every run (histograms merged), errors by kind, what the audit flagged; the saturation ratios between
servers; and, for a phase above saturation, what throughput alone predicts its latencies to be."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridgebench.campaign.config import LoadOptions, read
from bridgebench.load import driver
from bridgebench.load.phases import phases, saturation_rates
from bridgebench.stats import Estimate
from bridgebench.stats.executions import over_executions, ratio_over_executions
from bridgebench.store import Store
from bridgebench.study import stored_load

CONFIDENCE = 0.99
PERCENTILES = ("p50", "p90", "p99", "p99.9", "max")
LOAD_RESULT_VERSION = 1


def figure(values: list[float]) -> Estimate | None:
    """A mean over process executions, with its 99% Student-t interval where there are enough of them."""
    return over_executions(values, confidence=CONFIDENCE, scale="linear")


@dataclass(frozen=True)
class Ratio:
    """a's saturation rate over b's, over process executions (stats.executions.ratio_over_executions)."""

    a: str
    b: str
    value: float
    low: float | None
    high: float | None
    method: str = ""


def ratio(a: str, xa: list[float], b: str, xb: list[float]) -> Ratio | None:
    if not xa or not xb or min(xa) <= 0 or min(xb) <= 0:
        return None
    r = ratio_over_executions(xb, xa, confidence=CONFIDENCE)
    return Ratio(a, b, r.value, r.low, r.high, r.method)


@dataclass(frozen=True)
class Prediction:
    """Latency of a run aimed above saturation, from throughput alone. The server answers X requests a
    second (its saturation) while R a second are due: the request due at t (from the run's start) is
    answered at t·R/X, so its latency is t(R/X - 1); one still unanswered when the run ends at T is
    recorded at T - t (censored). Recorded are the requests due in [W, T] (W: the warm-up).
    `formula_*`: the seed's formula for completed requests only, from t = 0: (T/2)(1 - X/R), T(1 - X/R)."""

    intended_rate: float
    saturation_rate: float
    run_s: float
    warmup_s: float
    p50_s: float
    max_s: float
    formula_p50_s: float
    formula_max_s: float


def predict(intended: float, saturation: float, warmup_s: float, duration_s: float) -> Prediction:
    total = warmup_s + duration_s
    due = np.linspace(warmup_s, total, 200_001)
    answered_at = due * intended / saturation
    latency = np.where(answered_at <= total, answered_at - due, total - due)
    share = max(0.0, 1 - saturation / intended)
    return Prediction(intended, saturation, total, warmup_s, float(np.percentile(latency, 50)),
                      float(latency.max()), total / 2 * share, total * share)


@dataclass(frozen=True)
class LoadCell:
    phase: str
    mechanism: str
    fraction: float | None  # of saturation; None for the saturation phase
    planned: int
    ok: int
    failures: list[str]
    disturbed: list[str]
    intended_rate: float | None
    achieved: Estimate | None
    latency: dict[str, Estimate]  # percentile -> mean over executions
    merged: dict[str, float]  # over every request of every run
    service: dict[str, float]
    lag: dict[str, float]
    sent: int
    completed: int
    censored: int
    errors: dict[str, int]
    statuses: dict[str, int]
    distribution: list[list[float]]  # merged latency: [percentile, seconds]
    prediction: Prediction | None = None


@dataclass(frozen=True)
class LoadAnalysis:
    version: int
    campaign: dict[str, Any]
    options: dict[str, Any]
    load: dict[str, Any]
    mechanisms: list[dict[str, Any]]
    check: list[dict[str, Any]]
    phases: list[str]
    cells: list[LoadCell]
    ratios: list[Ratio] = field(default_factory=list)

    def cell(self, phase: str, mechanism: str) -> LoadCell | None:
        return next((c for c in self.cells if c.phase == phase and c.mechanism == mechanism), None)

    def label(self, mechanism: str) -> str:
        return next((m["label"] for m in self.mechanisms if m["mechanism"] == mechanism), mechanism)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def failed(self) -> int:
        return sum(len(c.failures) for c in self.cells)

    @property
    def disturbed(self) -> int:
        return sum(len(c.disturbed) for c in self.cells)


def _cell(phase: str, fraction: float | None, mechanism: str, planned: int, runs: list[Any],
          options: LoadOptions, saturation: float | None) -> LoadCell:
    ok = [r for r in runs if r.status == "ok" and r.info_json]
    results = [json.loads(r.info_json) for r in ok]
    failures = [f"execution {r.pexec + 1}: {r.status}: {r.detail}" for r in runs if r not in ok]
    disturbed = [f"execution {r.pexec + 1}: {r.disturbed}" for r in ok if r.disturbed]
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
        distribution=[list(p) for p in merged.get("distribution") or []] if merged else [],
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
    builds = store.builds(campaign_id)
    servers = [m for m in options.mechanisms if any(b["mechanism"] == m and b["available"] for b in builds)]
    saturation = saturation_rates(executions)
    cells = []
    for phase in phase_list:
        for mechanism in servers:
            runs = [e for e in executions if e.benchmark == phase.name and e.mechanism == mechanism]
            count = sum(1 for t in planned if t.benchmark == phase.name and t.mechanism == mechanism)
            sat = saturation.get(mechanism)
            cells.append(_cell(phase.name, phase.fraction, mechanism, count, runs, options,
                               float(np.mean(sat)) if sat else None))
    ratios = [r for a in servers for b in servers if a != b
              if (r := ratio(a, saturation.get(a, []), b, saturation.get(b, [])))]
    return LoadAnalysis(
        version=LOAD_RESULT_VERSION,
        campaign={"id": campaign.id, "study": campaign.study, "state": campaign.state, "created": campaign.created,
                  "finished": campaign.finished, "git_sha": campaign.git_sha, "machine": campaign.machine,
                  "environment": campaign.environment, "executions_planned": len(planned),
                  "executions_stored": len(executions)},
        options=asdict(options),
        load={"connections": load.connections, "fractions": list(load.fractions), "overload": load.overload,
              "driver_cpus": load.driver_cpus,
              "requests": [{"name": r.name, "weight": r.weight, "method": r.method, "path": r.path,
                            "expect_status": r.expect_status} for r in load.requests]},
        mechanisms=[{k: b[k] for k in ("mechanism", "label", "available", "reason", "version")} for b in builds],
        check=store.check_answers(campaign_id),
        phases=[p.name for p in phase_list],
        cells=cells,
        ratios=ratios,
    )
