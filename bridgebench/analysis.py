"""From the store to results: per benchmark × mechanism, warm-up classes, steady state and its CI, the
ratio to the baseline mechanism, and what failed. The result is plain data (JSON-able), cached in the
store and read by every report."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bridgebench import audit
from bridgebench.runner import OK
from bridgebench.stats import (
    ExecutionClass,
    classify_benchmark,
    classify_execution,
    outlier_mask,
    ratio_ci,
    summarise,
    too_short_for_changepoints,
)
from bridgebench.stats.summary import NOT_CLASSIFIED
from bridgebench.store import Store, StoredExecution

WRONG_ANSWER = "wrong answer"


def _majority_answers(executions: list[StoredExecution]) -> dict[str, str | None]:
    """Per benchmark, the answer most successful executions gave (None when there is a tie)."""
    by_bench: dict[str, Counter[str]] = defaultdict(Counter)
    for e in executions:
        if e.status == OK and e.answer is not None:
            by_bench[e.benchmark][e.answer] += 1
    majority: dict[str, str | None] = {}
    for bench, counts in by_bench.items():
        (top, n), *rest = counts.most_common()
        majority[bench] = top if not rest or rest[0][1] < n else None
    return majority


def _steady_samples(times: np.ndarray, cls: ExecutionClass | None) -> np.ndarray:
    """The iterations that count as steady state (outliers left out); all non-outliers for short runs."""
    if cls is None:
        return times[~outlier_mask(times)]
    keep = np.zeros(len(times), dtype=bool)
    for seg in cls.steady_segments:
        keep[seg.start:seg.end] = True
    return times[keep & ~cls.outliers]


def _spread(x: Any) -> dict[str, float] | None:
    return asdict(x) if x is not None else None


@dataclass
class _Cells:
    """The stored executions of a campaign, grouped by benchmark × mechanism."""

    series: dict[tuple[str, str], list[tuple[StoredExecution, np.ndarray]]]
    failures: dict[tuple[str, str], list[dict[str, Any]]]
    rss: dict[tuple[str, str], list[int]]
    disturbed: dict[tuple[str, str], int]  # executions the audit flagged, failed ones included
    excluded: dict[tuple[str, str], int]  # good executions left out because they were disturbed
    stored: int  # executions in the store, failed ones included
    executions: list[StoredExecution]


def _gather(store: Store, campaign_id: int, exclude_disturbed: bool = False) -> _Cells:
    executions = store.executions(campaign_id)
    majority = _majority_answers(executions)
    cells = _Cells(defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(int), defaultdict(int),
                   len(executions), executions)
    for e in executions:
        key = (e.benchmark, e.mechanism)
        if e.peak_rss_kb:
            cells.rss[key].append(e.peak_rss_kb)
        if e.disturbed:
            cells.disturbed[key] += 1
        status, detail = e.status, e.detail
        if status == OK and majority.get(e.benchmark) is None:
            status, detail = WRONG_ANSWER, "the mechanisms' answers have no majority"
        elif status == OK and majority[e.benchmark] != e.answer:
            status, detail = WRONG_ANSWER, f"answered {e.answer!r}, most gave {majority[e.benchmark]!r}"
        if status != OK:
            cells.failures[key].append({"pexec": e.pexec, "status": status, "detail": detail,
                                        "stderr_tail": e.stderr_tail[-500:]})
            continue
        if exclude_disturbed and e.disturbed:
            cells.excluded[key] += 1
            continue
        times = store.times(e.id)
        if e.batch and e.batch > 1:
            times = times / e.batch  # figures are per call
        cells.series[key].append((e, times))
    return cells


def _classify(arrays: list[np.ndarray]) -> list[ExecutionClass | None]:
    if too_short_for_changepoints(min(len(t) for t in arrays)):
        return [None] * len(arrays)
    return [classify_execution(t) for t in arrays]


def _steady_per_execution(arrays: list[np.ndarray], classes: list[ExecutionClass | None]) -> list[np.ndarray]:
    """Each process execution's steady iterations; executions with no steady state are left out."""
    kept = [_steady_samples(t, c) for t, c in zip(arrays, classes, strict=True)]
    return [k for k in kept if len(k) > 1]


REPORTED_COUNTERS = ("bytes_per_op", "allocs_per_op", "heap_kb")


def _counter_means(store: Store, executions: list[StoredExecution]) -> dict[str, float]:
    """Per counter the probe reported (B/op, allocs/op, heap KB…), the mean over all iterations. The mean,
    not the median: Go books small allocations a span at a time, so with few calls per iteration most
    iterations read 0 and a few read a span's worth; only the mean adds up to what was allocated."""
    out = {}
    for name in REPORTED_COUNTERS:
        values = [store.counter(e.id, name) for e in executions]
        values = [v for v in values if len(v)]
        if values:
            out[name] = float(np.mean(np.concatenate(values)))
    return out


STOLEN_SHARE = 0.10  # an iteration whose wall time exceeds its CPU time by more than this lost time to others


def _stolen_iterations(store: Store, execution: StoredExecution, times: np.ndarray) -> int | None:
    """Iterations whose wall time (`times`, per call as the analysis holds them) exceeded the process's CPU
    time by more than STOLEN_SHARE, where the probe reads a CPU clock (counter cpu_s, per iteration); None
    where it does not."""
    cpu = store.counter(execution.id, "cpu_s")
    if not len(cpu):
        return None
    cpu = cpu / (execution.batch or 1)
    return int(np.sum(times - cpu > STOLEN_SHARE * times))


def _setup_median(executions: list[StoredExecution]) -> float | None:
    """Start-up (load, spawn, instantiate: the probe's setup_s), the median over executions."""
    values = [json.loads(e.info_json).get("setup_s") for e in executions if e.info_json]
    values = [v for v in values if isinstance(v, int | float)]
    return float(np.median(values)) if values else None


def steady_samples(store: Store, campaign_id: int, exclude_disturbed: bool = False
                   ) -> dict[tuple[str, str], list[np.ndarray]]:
    """Per benchmark × mechanism, the steady-state iterations of each process execution."""
    out = {}
    for key, runs in _gather(store, campaign_id, exclude_disturbed).series.items():
        arrays = [t for _, t in runs]
        out[key] = _steady_per_execution(arrays, _classify(arrays))
    return out


def _audit_summary(executions: list[StoredExecution], exclude_disturbed: bool) -> dict[str, Any]:
    """The campaign's disturbance audit in a few figures: how many executions were audited and flagged,
    and the median and largest share of a core that others and steal took."""
    audited = [e for e in executions if e.others_cpu_s is not None and e.wall_s > 0]
    others = [e.others_cpu_s / e.wall_s for e in audited]  # type: ignore[operator]
    steal = [(e.steal_s or 0.0) / e.wall_s for e in audited]
    return {
        "audited": len(audited),
        "disturbed": sum(1 for e in executions if e.disturbed),
        "excluded": exclude_disturbed,
        "others_cores_median": float(np.median(others)) if others else None,
        "others_cores_max": float(np.max(others)) if others else None,
        "steal_cores_median": float(np.median(steal)) if steal else None,
        "steal_cores_max": float(np.max(steal)) if steal else None,
        "waited_s": float(sum(e.waited_s or 0.0 for e in executions)),
        "thresholds": asdict(audit.DEFAULT),
    }


def _adaptive_summary(store: Store, campaign_id: int, options: dict[str, Any],
                      cells: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any] | None:
    """With an adaptive budget: its settings, how many rounds it ran, and each cell's last verdict (also put
    on the cell as cell["adaptive"])."""
    if options.get("until_ci") is None:
        return None
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for d in store.decisions(campaign_id):
        last[(d["benchmark"], d["mechanism"])] = d
    states: Counter[str] = Counter()
    for key, cell in cells.items():
        d = last.get(key)
        cell["adaptive"] = ({"state": d["state"], "reason": d["reason"], "round": d["round"],
                             "half_width": d["half_width"]} if d else None)
        states[d["state"] if d else "not judged"] += 1
    return {"until_ci": options["until_ci"], "max_process_executions": options["max_process_executions"],
            "max_time_s": options["max_time_s"], "first_process_executions": options["process_executions"],
            "rounds": max((d["round"] for d in last.values()), default=-1) + 1, "states": dict(states)}


def estimates(store: Store, campaign_id: int, keys: list[tuple[str, str]], *, confidence: float = 0.99,
              seed: int = 0
              ) -> dict[tuple[str, str], tuple[int, str | None, dict[str, float] | None, str | None]]:
    """Per benchmark × mechanism in keys: the executions stored, the class, the steady performance with its
    CI (by the same rules as analyse()), and the class the cell had without its latest execution (None with
    fewer than two), so an adaptive budget can see whether the last round changed it."""
    gathered = _gather(store, campaign_id)
    stored: Counter[tuple[str, str]] = Counter((e.benchmark, e.mechanism) for e in gathered.executions)
    rng = np.random.default_rng(seed)
    out = {}
    for key in keys:
        arrays = [t for _, t in gathered.series.get(key, [])]
        if not arrays:
            out[key] = (stored[key], None, None, None)
            continue
        classes = _classify(arrays)
        summary = summarise(arrays, classes=classes, confidence=confidence, rng=rng)
        before = None
        if len(arrays) > 1:
            before = (NOT_CLASSIFIED if classes[0] is None
                      else classify_benchmark([c.kind for c in classes[:-1] if c is not None]))
        out[key] = (stored[key], summary.classification, _spread(summary.steady_performance), before)
    return out


def analyse(store: Store, campaign_id: int, *, confidence: float = 0.99, seed: int = 0,
            exclude_disturbed: bool = False) -> dict[str, Any]:
    campaign = store.campaign(campaign_id)
    options = campaign.config["options"]
    builds = store.builds(campaign_id)
    gathered = _gather(store, campaign_id, exclude_disturbed)
    rng = np.random.default_rng(seed)

    cells: dict[tuple[str, str], dict[str, Any]] = {}
    steady: dict[tuple[str, str], list[np.ndarray]] = {}
    for bench in options["benchmarks"]:
        for b in builds:
            if not b["available"]:
                continue
            key = (bench, b["mechanism"])
            runs = gathered.series.get(key, [])
            rss = gathered.rss.get(key)
            cell: dict[str, Any] = {
                "benchmark": bench, "mechanism": b["mechanism"], "executions_ok": len(runs),
                "failures": gathered.failures.get(key, []),
                "peak_rss_kb": float(np.median(rss)) if rss else None,
                "disturbed": gathered.disturbed.get(key, 0),
                "excluded_disturbed": gathered.excluded.get(key, 0),
            }
            if runs:
                cell["counters"] = _counter_means(store, [e for e, _ in runs])
                cell["setup_s"] = _setup_median([e for e, _ in runs])
                arrays = [t for _, t in runs]
                classes = _classify(arrays)
                summary = summarise(arrays, classes=classes, confidence=confidence, rng=rng)
                steady[key] = _steady_per_execution(arrays, classes)
                cell |= {
                    "classification": summary.classification,
                    "class_counts": dict(summary.class_counts),
                    "steady_iteration": _spread(summary.steady_iteration),
                    "steady_seconds": _spread(summary.steady_seconds),
                    "steady_performance": _spread(summary.steady_performance),
                    "method": summary.method,
                    "per_execution": [
                        {"execution_id": e.id, "pexec": e.pexec, "kind": c.kind if c else None,
                         "disturbed": e.disturbed, "stolen_iterations": _stolen_iterations(store, e, t),
                         "steady_iteration": c.steady_iteration if c else None,
                         "changepoints": [s.start for s in c.segments[1:]] if c else [],
                         "steady_start": c.steady_segments[0].start if c and c.steady_segments else None,
                         "outliers": int(c.outliers.sum()) if c else 0}
                        for (e, t), c in zip(runs, classes, strict=True)
                    ],
                }
            cells[key] = cell

    baseline = campaign.config["study"]["study"].get("baseline")
    if baseline and not any(b["mechanism"] == baseline and b["available"] for b in builds):
        baseline = None
    for (bench, mech), cell in cells.items():
        base = steady.get((bench, baseline)) if baseline else None
        mine = steady.get((bench, mech))
        if base and mine:
            cell["ratio"] = asdict(ratio_ci(base, mine, confidence=confidence, rng=rng))
        else:
            cell["ratio"] = None

    geomeans = {}
    for b in builds:
        ratios = [c["ratio"]["value"] for (_, m), c in cells.items() if m == b["mechanism"] and c.get("ratio")]
        if ratios and len(ratios) == len(options["benchmarks"]):
            geomeans[b["mechanism"]] = math.exp(sum(math.log(r) for r in ratios) / len(ratios))

    return {
        "adaptive": _adaptive_summary(store, campaign_id, options, cells),
        "campaign": {
            "id": campaign.id, "study": campaign.study, "state": campaign.state, "created": campaign.created,
            "finished": campaign.finished, "git_sha": campaign.git_sha, "machine": campaign.machine,
            "environment": campaign.environment, "options": options,
            "executions_planned": len(store.planned(campaign_id)),
            "executions_stored": gathered.stored,
        },
        "confidence": confidence,
        "baseline": baseline,
        "mechanisms": builds,
        "benchmarks": list(options["benchmarks"]),
        "check": store.check_answers(campaign_id),
        "audit": _audit_summary(gathered.executions, exclude_disturbed),
        "cells": list(cells.values()),
        "geomean_ratio": geomeans,
    }


def current_analysis(store: Store, campaign_id: int, exclude_disturbed: bool = False) -> dict[str, Any]:
    """The stored analysis of a campaign, recomputed (and stored) if executions were added since or it
    was computed with the other choice about disturbed executions."""
    result = store.analysis(campaign_id)
    if (result is None or result["campaign"]["executions_stored"] != len(store.executions(campaign_id))
            or result.get("audit", {}).get("excluded", False) != exclude_disturbed):
        result = analyse(store, campaign_id, exclude_disturbed=exclude_disturbed)
        store.save_analysis(campaign_id, result)
    return result
