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


def has_disturbed(result: dict[str, Any]) -> bool:
    return any(c.get("disturbed") for c in result["cells"])


def disturbed_cell(cell: dict[str, Any]) -> str:
    """How many of the cell's executions ran on a disturbed machine, of how many, and whether they count."""
    n = cell.get("disturbed") or 0
    if not n:
        return ""
    total = cell.get("executions_ok", 0) + len(cell.get("failures") or []) + (cell.get("excluded_disturbed") or 0)
    return f"{n}/{total}" + (" left out" if cell.get("excluded_disturbed") else "")


def disturbance_line(result: dict[str, Any]) -> str | None:
    """The campaign-level warning, or None when the audit found the machine quiet (or could not look)."""
    a = result.get("audit") or {}
    if not a.get("audited"):
        return "disturbance audit: not available here (/proc/stat unreadable or no launcher)" if result["cells"] \
            else None
    if not a.get("disturbed"):
        return None
    t = a["thresholds"]
    how = ("they are left out of the analysis (--exclude-disturbed)" if a["excluded"] else
           "they are kept; `bridgebench analyse --exclude-disturbed` leaves them out")
    return (f"WARNING: {a['disturbed']} of {result['campaign']['executions_stored']} process executions ran on a "
            f"disturbed machine (others above {t['others_cores']:g} core, steal above {t['steal_cores']:g} core, or "
            f"wall above CPU by {t['unaccounted_share']:.0%} on a busy machine; others took up to "
            f"{a['others_cores_max']:.2f} cores, steal up to {a['steal_cores_max']:.2f}); {how}. "
            "See the Disturbed column.")


def columns(result: dict[str, Any]) -> tuple[str, ...]:
    extra = ("B/op", "allocs/op") if has_allocation_counters(result) else ()
    extra += ("Start-up",) if has_setup(result) else ()
    tail = COLUMNS[-2:] + (("Disturbed",) if has_disturbed(result) else ())
    return COLUMNS[:-2] + extra + tail


def cell_rows(result: dict[str, Any]) -> list[tuple[str, ...]]:
    labels = mechanism_labels(result)
    allocations = has_allocation_counters(result)
    setup = has_setup(result)
    disturbed = has_disturbed(result)
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
            *((disturbed_cell(cell),) if disturbed else ()),
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
    executions = (f"{o['process_executions']}–{o['max_process_executions']} (adaptive)"
                  if o.get("until_ci") is not None else f"{o['process_executions']}")
    return (f"campaign {c['id']} of {c['study']} ({c['state']}): budget '{o['budget']}', "
            f"{executions} process executions × {o['iterations']} iterations, "
            f"{c['executions_stored']}/{c['executions_planned']} executions stored; "
            f"git {c['git_sha'][:12]}; machine {c['machine']}; method: {', '.join(sorted(method)) or '—'}")


def adaptive_line(result: dict[str, Any]) -> str | None:
    """What an adaptive budget did, in one line."""
    a = result.get("adaptive")
    if not a:
        return None
    states = ", ".join(f"{n} {s}" for s, n in sorted(a["states"].items()))
    return (f"adaptive budget: each cell until its 99% CI is within ±{a['until_ci']:.1%} and its class holds, "
            f"from {a['first_process_executions']} to at most {a['max_process_executions']} process executions, "
            f"at most {a['max_time_s']:g} s of executions; {a['rounds']} round(s) judged: {states}")


def unsettled_rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The cells an adaptive budget left unsettled, and why (benchmark, mechanism, state, reason)."""
    labels = mechanism_labels(result)
    return [(c["benchmark"], labels.get(c["mechanism"], c["mechanism"]), c["adaptive"]["state"],
             c["adaptive"]["reason"]) for c in result["cells"]
            if c.get("adaptive") and c["adaptive"]["state"] != "settled"]
