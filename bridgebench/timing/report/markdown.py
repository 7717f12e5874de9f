"""The markdown report: the same tables as the terminal, plus the environment."""

from __future__ import annotations

from bridgebench.report import speed
from bridgebench.report.markdown import headline, table
from bridgebench.timing.report import tables
from bridgebench.timing.result import Analysis


def render(result: Analysis) -> str:
    c = result.campaign
    out = [f"# bridgebench: {c.study}, campaign {c.id}", ""]
    out += headline(tables.headline_lines(result))
    out += [tables.budget_line(result), ""]
    # the lines under the headline, as each is marked: "{}" plain, "> {}" a note, "> **{}**" a warning
    for line, mark in ((tables.metric_line(result), "{}"), (tables.disturbance_line(result), "> **{}**"),
                       (tables.adaptive_line(result), "{}"), (tables.more_time_line(result), "{}"),
                       (tables.replaced_note(result), "{}"),
                       (tables.few_executions_line(result), "> {}"),
                       (tables.unseparated_line(result), "> {}"), (tables.per_call_line(result), "{}"),
                       (speed.line(result.campaign), "> **{}**" if speed.warning(result.campaign) else "{}")):
        if line:
            out += [mark.format(line), ""]
    base = result.baseline
    out += ["## Steady state" + (f" (ratio to {base}, 99% CIs)" if base else ""), ""]
    out += table(tables.columns(result), tables.cell_rows(result))
    moving = tables.drift_note(result)
    out += [moving, ""] if moving else []
    workloads = tables.workload_rows(result)
    if workloads:
        out += ["## What each benchmark ran", "", *table(tables.WORKLOAD_COLUMNS, workloads)]
    if result.geomean_ratio:
        out += [f"## {tables.geomean_title(result, base)}", ""]
        out += table(("Mechanism", "Geomean"), tables.geomean_rows(result))
    paired = tables.pairing_rows(result)
    if paired:
        out += ["## Lock-step blocks", "", tables.PAIRING_NOTE, "", *table(tables.PAIRING_COLUMNS, paired)]
        for note in (tables.within_line(result), tables.modes_note(result), tables.turns_note(result)):
            out += [note, ""] if note else []
    jit = tables.jit_rows(result)
    if jit:
        out += ["## What LuaJIT's compiler did", "", tables.JIT_NOTE, "", *table(tables.JIT_COLUMNS, jit)]
    beside = tables.beside_line(result)
    if beside:
        out += ["## Counts beside time", "", beside, ""]
        rows = tables.beside_rows(result)
        out += table(tables.BESIDE_COLUMNS, rows) if rows else []
    unsettled = tables.unsettled_rows(result)
    if unsettled:
        out += ["## Not settled by the adaptive budget", ""]
        out += table(("Benchmark", "Mechanism", "State", "Why"), unsettled)
    unavailable = tables.unavailable_rows(result)
    if unavailable:
        out += ["## Unavailable mechanisms", "", *table(("Mechanism", "Reason"), unavailable)]
    problems = tables.check_problems(result)
    if problems:
        out += ["## Answer check problems", "", *table(("Benchmark", "Mechanism", "Status", "Detail"), problems)]
    if result.machines:
        out += ["## Machines", "", "The campaign's process executions ran on more than one machine. *Consistent*: "
                "no two machines' shares of a cell differ by the differ's rules (class shares, steady-performance "
                "99% CIs); *distinguishable*: some do, and the cell's figures mix machines.", ""]
        out += table(tables.MACHINE_COLUMNS, tables.machine_rows(result))
        out += table(tables.MACHINE_CELL_COLUMNS, tables.machine_cell_rows(result))
    out += ["## Machine", "", *table(("What", "Value"), tables.environment_rows(result))]
    out += ["## Mechanism versions", ""]
    out += table(("Mechanism", "Version"), tables.version_rows(result))
    return "\n".join(out)
