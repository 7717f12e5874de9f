"""The rows every report shows, built once from the analysis result."""

from __future__ import annotations

from typing import Any

from bridgebench.report import fmt

COLUMNS = ("Benchmark", "Mechanism", "Class", "Steady iter (#)", "Steady iter (s)", "Steady perf (99% CI)",
           "vs baseline", "Peak RSS", "Failed")


def mechanism_labels(result: dict[str, Any]) -> dict[str, str]:
    return {m["mechanism"]: m["label"] for m in result["mechanisms"]}


def has_allocation_counters(result: dict[str, Any]) -> bool:
    return any("bytes_per_op" in (c.get("counters") or {}) for c in result["cells"])


def has_setup(result: dict[str, Any]) -> bool:
    return any(c.get("setup_s") is not None for c in result["cells"])


def columns(result: dict[str, Any]) -> tuple[str, ...]:
    extra = ("B/op", "allocs/op") if has_allocation_counters(result) else ()
    extra += ("Start-up",) if has_setup(result) else ()
    return COLUMNS[:-2] + extra + COLUMNS[-2:]


def cell_rows(result: dict[str, Any]) -> list[tuple[str, ...]]:
    labels = mechanism_labels(result)
    allocations = has_allocation_counters(result)
    setup = has_setup(result)
    rows = []
    for cell in result["cells"]:
        rss = cell.get("peak_rss_kb")
        counters = cell.get("counters") or {}
        extra = (fmt.count(counters.get("bytes_per_op")), fmt.count(counters.get("allocs_per_op"))) \
            if allocations else ()
        extra += (fmt.duration(cell.get("setup_s")),) if setup else ()
        rows.append((
            cell["benchmark"],
            labels.get(cell["mechanism"], cell["mechanism"]),
            fmt.classification(cell),
            fmt.spread(cell.get("steady_iteration")),
            fmt.spread(cell.get("steady_seconds"), as_duration=True),
            fmt.estimate(cell.get("steady_performance")),
            fmt.ratio(cell.get("ratio")),
            *extra,
            f"{rss / 1024:.0f} MiB" if rss else "—",
            fmt.failures(cell),
        ))
    return rows


def unavailable_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["label"], m["reason"]) for m in result["mechanisms"] if not m["available"]]


def check_problems(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(r["benchmark"], r["mechanism"], r["status"], r["detail"] or (r["answer"] or ""))
            for r in result["check"] if r["status"] != "agrees"]


def geomean_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    labels = mechanism_labels(result)
    ordered = sorted(result["geomean_ratio"].items(), key=lambda x: x[1])
    return [(labels.get(m, m), fmt.times(g)) for m, g in ordered]


def environment_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    env = result["campaign"]["environment"]
    keys = ("cpu_model", "cpu_count", "memory_gib", "kernel", "os", "governor", "turbo", "aslr", "virtualisation",
            "load_average")
    return [(k, str(env.get(k))) for k in keys]


def budget_line(result: dict[str, Any]) -> str:
    c = result["campaign"]
    o = c["options"]
    method = {cell.get("method") for cell in result["cells"] if cell.get("method")}
    return (f"campaign {c['id']} of {c['study']} ({c['state']}): budget '{o['budget']}', "
            f"{o['process_executions']} process executions × {o['iterations']} iterations, "
            f"{c['executions_stored']}/{c['executions_planned']} executions stored; "
            f"git {c['git_sha'][:12]}; machine {c['machine']}; method: {', '.join(sorted(method)) or '—'}")
