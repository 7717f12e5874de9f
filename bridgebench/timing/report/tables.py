"""The rows every report shows, built once from the analysis result."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence

from bridgebench import question
from bridgebench.digits import significant
from bridgebench.instructions import INSTRUCTIONS
from bridgebench.report import fmt
from bridgebench.report.fmt import CLASS_SYMBOL
from bridgebench.result import OUT_OF_TIME, SETTLED
from bridgebench.stats import BAD_INCONSISTENT, GOOD_INCONSISTENT, drift
from bridgebench.stats.classify import DEFAULT_DELTA_RELATIVE
from bridgebench.stats.executions import MIN_EXECUTIONS
from bridgebench.stats.lockstep import LOCKSTEP_METHOD, MODES_BLOCKS, all_alike
from bridgebench.stats.summary import CHANGEPOINTS_METHOD, NOT_CLASSIFIED
from bridgebench.timing import jitdiag, more_time
from bridgebench.timing.result import Analysis, BesideTime, Cell

COLUMNS = ("Benchmark", "Mechanism", "Class", "Steady iter (#)", "Steady iter (s)", "Steady perf (99% CI)",
           "vs baseline", "Peak RSS", "Failed")


def has_allocation_counters(result: Analysis) -> bool:
    return any("bytes_per_op" in c.counters for c in result.cells)


def has_setup(result: Analysis) -> bool:
    return any(c.setup_s is not None for c in result.cells)


def has_rss(result: Analysis) -> bool:
    """Whether any cell has a peak RSS (a counted campaign has none: it would be valgrind's)."""
    return any(c.peak_rss_kb is not None for c in result.cells)


def has_disturbed(result: Analysis) -> bool:
    return any(c.disturbed for c in result.cells)


def disturbed_cell(cell: Cell) -> str:
    """How many of the cell's executions ran on a disturbed machine, of how many, and whether they count."""
    if not cell.disturbed:
        return ""
    total = cell.executions_ok + len(cell.failures) + cell.excluded_disturbed
    return f"{cell.disturbed}/{total}" + (" left out" if cell.excluded_disturbed else "")


def disturbance_line(result: Analysis) -> str | None:
    """The campaign-level warning, or None when the audit found the machine quiet (or could not look)."""
    a = result.audit
    if not a.audited:
        return "disturbance audit: not available here (/proc/stat unreadable or no launcher)" if result.cells \
            else None
    if not a.disturbed:
        return None
    t = a.thresholds
    how = ("they are left out of the analysis (--exclude-disturbed)" if a.excluded else
           "they are kept; `bridgebench analyse --exclude-disturbed` leaves them out")
    return (f"WARNING: {a.disturbed} of {result.campaign.executions_stored} process executions ran on a "
            f"disturbed machine (others above {t['others_cores']:g} core, steal above {t['steal_cores']:g} core, or "
            f"wall above CPU by {t['unaccounted_share']:.0%} on a busy machine; others took up to "
            f"{a.others_cores_max or 0:.2f} cores, steal up to {a.steal_cores_max or 0:.2f}); {how}. "
            "See the Disturbed column.")


def columns(result: Analysis) -> tuple[str, ...]:
    extra = ("B/op", "allocs/op") if has_allocation_counters(result) else ()
    extra += ("Start-up",) if has_setup(result) else ()
    tail = (("Peak RSS",) if has_rss(result) else ()) + ("Failed",) + (("Disturbed",) if has_disturbed(result)
                                                                        else ())
    head = COLUMNS[:-2]
    if result.metric == INSTRUCTIONS:  # iterations counted, not timed
        head = tuple("Steady iter (Ir)" if c == "Steady iter (s)" else "Steady count (99% CI)"
                     if c == "Steady perf (99% CI)" else c for c in head)
    return head + extra + tail


def cell_rows(result: Analysis) -> list[tuple[str, ...]]:
    allocations = has_allocation_counters(result)
    setup = has_setup(result)
    disturbed = has_disturbed(result)
    rss = has_rss(result)
    rows = []
    for cell in result.cells:
        extra = (fmt.count(cell.counters.get("bytes_per_op")), fmt.count(cell.counters.get("allocs_per_op"))) \
            if allocations else ()
        extra += (fmt.duration(cell.setup_s),) if setup else ()
        rows.append((
            cell.benchmark,
            result.label(cell.mechanism),
            classification(cell),
            fmt.spread(cell.steady_iteration),
            fmt.spread(cell.steady_seconds, as_duration=True, metric=result.metric),
            fmt.estimate(cell.steady_performance, result.metric),
            fmt.ratio(cell.ratio, precise=result.metric == INSTRUCTIONS),
            *extra,
            *((fmt.rss(cell.peak_rss_kb),) if rss else ()),
            failures(cell),
            *((disturbed_cell(cell),) if disturbed else ()),
        ))
    return rows


def unavailable_rows(result: Analysis) -> list[tuple[str, str]]:
    return [(m.label, m.reason) for m in result.mechanisms if not m.available]


def check_problems(result: Analysis) -> list[tuple[str, str, str, str]]:
    return [(r.benchmark, result.label(r.mechanism), r.status, r.detail or (r.answer or ""))
            for r in result.check if r.status != "agrees"]


WORKLOAD_COLUMNS = ("Benchmark", "Parameter", "Mechanisms that ran it")


def workload_rows(result: Analysis) -> list[tuple[str, str, str]]:
    """What each benchmark ran, shown when a benchmark leaves some mechanisms out (a smaller size for the
    slow ones, an operation only some have); empty otherwise."""
    if all(w.everyone for w in result.workloads):
        return []
    return [(w.benchmark, w.param, "all" if w.everyone else ", ".join(w.mechanisms) or "none")
            for w in result.workloads]


def geomean_title(result: Analysis, base: str) -> str:
    """The geometric means' heading; it names the benchmarks they are over when some mechanism skipped one."""
    over = [b for b in result.benchmarks if all(result.cell(b, m) for m in result.geomean_ratio)]
    title = f"Geometric mean of ratios to {base}"
    return title if len(over) == len(result.benchmarks) else f"{title} (over {', '.join(over)})"


def geomean_rows(result: Analysis) -> list[tuple[str, str]]:
    ordered = sorted(result.geomean_ratio.items(), key=lambda x: x[1])
    return [(result.label(m), fmt.times(g)) for m, g in ordered]


ENVIRONMENT_KEYS = ("cpu_model", "cpu_signature", "cpu_count", "memory_gib", "kernel", "os", "governor", "turbo",
                    "aslr", "virtualisation", "booted", "load_average")
RECORDED_LATER = ("cpu_signature", "booted")  # campaigns stored before 2026-11-27 lack them: no row


def environment_rows(result: Analysis) -> list[tuple[str, str]]:
    env = result.campaign.environment
    return [(k, str(env.get(k))) for k in ENVIRONMENT_KEYS if k in env or k not in RECORDED_LATER]


def version_rows(result: Analysis) -> list[tuple[str, str]]:
    return [(m.label, m.version or "—") for m in result.mechanisms if m.available]


def steady_words(result: Analysis) -> str:
    """How the cells' steady states were found, with the δ where changepoints found them, and how many cells each
    way where there are two (a default lua-vms campaign classifies its JITs and not its interpreters)."""
    counts = Counter(c.method for c in result.cells if c.method)
    said = {CHANGEPOINTS_METHOD: f"by changepoints, {delta_words(result.campaign.options)}"}
    return " and ".join(said.get(m, m) + (f" ({n} cell{'s' if n != 1 else ''})" if len(counts) > 1 else "")
                        for m, n in sorted(counts.items())) or "—"


def ratio_methods(result: Analysis) -> str:
    """How the ratios were computed, with how many each way (pairing by round needs two shared rounds)."""
    counts = Counter(c.ratio.method for c in result.cells if c.ratio and c.mechanism != result.baseline)
    return ", ".join(f"{method} ({n})" for method, n in sorted(counts.items()))


# What a lock-step campaign's way of taking turns (options.TURNS) adds to its method line; separate adds nothing.
_ON_CPU = ("iteration was timed by its processes' CPU time, not the wall clock (a cell run alone by its probe's own "
           "CPU time, or where the probe reports none by the wall clock)")
_SLOW_DAY = "an option whose A/A and power were measured only on a slow day"
_TURNS_WORDS = {
    "together": ("; every member of a block took its turns at the same time, the scheduler sharing the CPU among "
                 f"them, and each {_ON_CPU}: a ratio is of CPU times on a shared CPU, and between unlike mechanisms "
                 "(an interpreter and a JIT) it carries what each pays for sharing the CPU, which differs by "
                 f"mechanism; read it between a VM and its twin or fork; {_SLOW_DAY} (methodology §13)"),
    "twins": ("; {who} at the same time, the scheduler sharing "
              f"the CPU between them, and the others took theirs alone; every {_ON_CPU}: a ratio between twins is "
              "of CPU times on a shared CPU, where both pay for sharing it, alike as far as measured; {across} "
              "(methodology §13)"),
    "interleaved": ("; {who} interleaved (one iteration each, in an order drawn for each iteration, so that each "
                    "followed another process's); {across} (methodology §13)"),
}


# Twins or interleaved: how a ratio across (a member that took its turns alone against the baseline beside its twin)
# was taken.
_SOLO = ("where a block had members besides the baseline and its twins, the baseline took a turn alone as well every "
         "round, and their ratios are to those: {cost}; the baseline's own times are its turns alone, a twin's are "
         "beside the baseline (its steady performance carries that, its ratio is to the baseline's turns beside it); "
         "{measured}")
# How far each way's A/A and power are measured with the baseline's turn alone (methodology §13)
_MEASURED = {"twins": "an option whose A/A and power were measured this way only on a slow day",
             "interleaved": "an option whose A/A held this way on a slow day and whose power there fell below "
                            "separate turns' (the baseline's turn alone lengthens every round, so fewer blocks fit "
                            "the time)"}
# What a JIT pays beside its twin, which its turns alone do not
_COST = {"twins": "beside its twin a JIT paid for sharing the CPU, which a member alone does not",
         "interleaved": "interleaved, each of a JIT's iterations ran on caches its twin's had just filled, where a "
                        "turn alone pays that once"}
_CARRIES = ("a ratio across (an interpreter against a JIT and its twin) sets one side's time alone against the "
            f"other's beside its twin, and carries what the latter pays for the sharing; {_SLOW_DAY}")


def _solo(result: Analysis) -> bool:
    """Twins or interleaved: whether the campaign's baseline took turns alone too (twins since 2026-11-29,
    interleaved since 2026-11-30), so that only it and its twins took theirs at once or interleaved."""
    return any(r.twin_times for c in result.cells if c.mechanism == result.baseline for r in c.per_execution)


def pairing_words(result: Analysis) -> str:
    """How the campaign paired its executions and drew its layouts, naming the cells a lock-step campaign ran
    alone (their probes have no stepped mode), for the method line."""
    o = result.campaign.options
    if result.metric != "seconds" or "pairing" not in o:
        return ""
    words = ("lock-step blocks (a benchmark's mechanisms as live processes on one CPU, taking turns iteration by "
             "iteration)" if o["pairing"] == "lockstep" else "sequential (one process execution after another)")
    alone = sorted({r.mechanism for r in result.check if r.stepped is False})
    if o["pairing"] == "lockstep" and alone:
        words += f"; not paired, their probes have no stepped mode: {', '.join(alone)}"
    several = threaded(result) if o["pairing"] == "lockstep" else ""
    if several:
        words += (f"; sharing the block's one CPU among several threads (their ratios are costs on one CPU; "
                  f"`--pairing sequential` spreads them, methodology §13): {several}")
    if o["pairing"] == "lockstep":
        solo = _solo(result)
        turns = o.get("turns") or ""
        across = (_SOLO.replace("{cost}", _COST.get(turns, "")).replace("{measured}", _MEASURED.get(turns, ""))
                  if solo else _CARRIES)
        words += _TURNS_WORDS.get(turns, "").replace("{across}", across).replace(
            "{who}", "the baseline and its twins (as the study names them) took their turns" if solo else
            "members whose turns were equal (a VM and its twin) took them")
    drawn = {"drawn": "drawn per execution", "shared": "drawn per block, the same for its members"}.get(
        o.get("layout") or "", "fixed by the paths")
    return f"{words}; memory layout {drawn}"


def threaded(result: Analysis) -> str:
    """The mechanisms whose processes in a block had more than one thread (Go's runtime, a plugin's RPC
    server): pinned, their threads take turns on one CPU where alone they would spread over every CPU."""
    most: dict[str, tuple[int, int]] = {}
    for c in result.cells:
        for r in c.per_execution:
            if r.block and (r.threads > 1 or r.processes > 1):
                t, p = most.get(c.mechanism, (0, 0))
                most[c.mechanism] = (max(t, r.threads), max(p, r.processes))
    return ", ".join(f"{result.label(m)} (up to {t} threads in {p} process{'es' if p > 1 else ''})"
                     for m, (t, p) in sorted(most.items()))


PAIRING_COLUMNS = ("Benchmark", "Mechanism", "Blocks", "Turns (baseline:it)", "Round", "sd within blocks",
                   "sd between blocks", "Share within")
PAIRING_NOTE = ("Each ratio to the baseline from lock-step blocks: the sd of the rounds' log ratios within a block "
                "(what taking turns leaves of the machine's speed steps; each block's variance counted once) beside "
                "the sd of the blocks' mean log ratios (what fresh processes and layouts differ by; the interval is "
                "Student's t over these). Round: what a round of the block lasted (every member's turn once, the "
                "median over the ratio's blocks); speed steps shorter than that fall on one side of a ratio only. "
                "Share within: how much of the variance between blocks the noise within them accounts for (a "
                "block's mean carries its rounds' noise over their number).")


def _paired(result: Analysis) -> list[Cell]:
    """The ratios that rest on lock-step blocks (blocks of one round have no spread within, one block none
    between: "—")."""
    return [c for c in result.cells if c.ratio is not None and c.ratio.method == LOCKSTEP_METHOD
            and c.mechanism != result.baseline]


def pairing_rows(result: Analysis) -> list[tuple[str, ...]]:
    def share(sd: float | None) -> str:
        return "—" if sd is None else f"{sd:.2%}"

    return [(c.benchmark, result.label(c.mechanism), str(c.ratio.executions if c.ratio else "—"),
             ", ".join(f"{a}:{b}" for a, b in c.ratio_turns) or "—", fmt.duration(c.ratio_round_s),
             share(c.ratio_within_sd), share(c.ratio_between_sd), _within_pct(c.ratio_within_share))
            for c in _paired(result)]


def _within_pct(share: float | None) -> str:
    """A share within as a percentage; past 100 % (both variances are estimated) it is all of it."""
    return "—" if share is None else f"{min(share, 1.0):.0%}"


def within_line(result: Analysis) -> str | None:
    """Whose noise set the lock-step intervals' width, mechanism by mechanism: the median share within of each
    mechanism's ratios, and what each end of it means for getting more of them decided."""
    shares: dict[str, list[float]] = {}
    for c in _paired(result):
        if c.ratio_within_share is not None:
            shares.setdefault(c.mechanism, []).append(c.ratio_within_share)
    if not shares:
        return None
    medians = ", ".join(f"{result.label(m)} {_within_pct(statistics.median(v))}" for m, v in shares.items())
    return (f"The share of the spread between blocks that the noise within them makes up, the median over each "
            f"mechanism's ratios: {medians}. That noise is the machine's speed steps that taking turns did not cancel, "
            f"and the benchmark's own from one round to the next. Near 100 %, it set these intervals' width: a quieter "
            f"machine or hour narrows them, as do more rounds a block (a budget's `later_steady`) at a cost in time; "
            f"near 0, the processes and layouts differ by that much, and only more blocks do "
            f"(stats.lockstep.spread, which takes a block's rounds as independent: where neighbouring rounds' "
            f"ratios move together, it reads low).")


TURN_COST_S = 0.0025
"""About the most a turn taken after a block's other processes cost here: a fixed time, not a share of the turn
(evidence/turn_cause.py --paired: LuaJIT's havlak and json 1.3–2.4 ms at turns of 1 to 8 iterations; docs/methodology.md
§13, "The default's interpreter ratios against processes alone")."""
UNLIKE_SHARE = 0.01
"""Two sides whose turns that cost would be shares of more than this apart took turns of unlike times."""


def turns_note(result: Analysis) -> str | None:
    """What a ratio whose two sides' turns took unlike times is a ratio of: a turn runs after the block's other
    processes used the CPU and, on a benchmark with much data, pays about a fixed time for it (and a benchmark's own
    rhythm, havlak's heavy iteration every other one, can fall in step with the turns), so the shorter turn pays a
    larger share, and the ratio weighs that differently on its two sides. Says how many of them took unlike turns
    only in their first blocks, whose turns go by iterations even where the later ones are sized alike."""
    base = _base_seconds(result)
    unlike = [c for c in _paired(result) if _unlike_turns(c, base.get(c.benchmark))]
    if not unlike:
        return None
    first = int(result.campaign.options.get("process_executions") or 0)
    only_first = unlike_only_first(result)
    where = ("" if not only_first else
             f" In {'all' if len(only_first) == len(unlike) else len(only_first)} of them only the first {first} "
             f"blocks' turns were unlike: those go by iterations (a JIT's warm-up beside an interpreter's few), the "
             f"later ones took turns alike.")
    return (f"{len(unlike)} of these ratios compare{'s' if len(unlike) == 1 else ''} sides whose turns took unlike "
            f"times: a turn runs after the block's other processes used the CPU and, on benchmarks with much data, "
            f"pays about a fixed time for that (up to {TURN_COST_S * 1000:g} ms measured here), which would be a "
            f"share of one side's turns more than {UNLIKE_SHARE:.0%} from the other's (the Turns column gives their "
            f"lengths in iterations; a budget's `turn_s` sizes the later blocks' turns to the baseline's turn, as near "
            f"as whole iterations allow). Such a ratio is one of the turns as they ran (or their iterations fall in "
            f"step with the benchmark's own rhythm), and can differ from a sequential run's by more than its interval "
            f"says (evidence/turn_first.py reads it "
            f"from this campaign's store, and evidence/ratio_widths.py SEQUENTIAL.json --versus THIS.json sets this "
            f"campaign's ratios against a sequential run's, each process alone; methodology §13).{where}")


def _base_seconds(result: Analysis) -> dict[str, float]:
    """Each benchmark's baseline iteration (its steady performance)."""
    return {c.benchmark: c.steady_performance.value for c in result.cells
            if c.mechanism == result.baseline and c.steady_performance}


def unlike_only_first(result: Analysis) -> list[Cell]:
    """The lock-step ratios whose sides took unlike turns only in the campaign's first blocks: unlike over all their
    blocks, alike in the later ones (Cell.ratio_later_turns)."""
    base = _base_seconds(result)
    return [c for c in _paired(result) if c.ratio_later_turns and _unlike_turns(c, base.get(c.benchmark))
            and not _unlike(c.ratio_later_turns, c.ratio.value if c.ratio else None, base.get(c.benchmark))]


def _unlike_turns(c: Cell, base_s: float | None) -> bool:
    """Whether a ratio's sides took turns of unlike times in some block: a turn's cost (TURN_COST_S) a share of
    one side's turns more than UNLIKE_SHARE from the other's, from the turns' lengths, the baseline's iteration
    (`base_s`) and the ratio's estimate; without those two, turns of different lengths."""
    return _unlike(c.ratio_turns, c.ratio.value if c.ratio else None, base_s)


def _unlike(turns: Iterable[tuple[int, int]], value: float | None, base_s: float | None) -> bool:
    if value is None or not base_s:
        return any(base != it for base, it in turns)
    return any(abs(TURN_COST_S / (base * base_s) - TURN_COST_S / (it * base_s * value)) > UNLIKE_SHARE
               for base, it in turns)


def drift_note(result: Analysis) -> str | None:
    """The cells whose steady state kept moving past their warm-up by more than the study's margin, where later
    executions are cut short (later_steady): their later executions read the steady state where it starts."""
    later = result.campaign.options.get("later_steady")
    moving = [c for c in result.cells if drift.moves(c.steady_drift, result.equivalence)]
    if not later or not moving:
        return None
    said = "; ".join(f"{result.label(c.mechanism)} on {c.benchmark} ×{c.steady_drift.value:.3f} "
                     f"({c.steady_drift.low:.3f}–{c.steady_drift.high:.3f})"
                     for c in moving if c.steady_drift and c.steady_drift.low and c.steady_drift.high)
    return (f"Steady states that kept moving: in their first executions, the first {later} steady iterations "
            f"against the others, beyond ±{result.equivalence:.0%} at 99 % over those executions: {said}. The later "
            f"executions stop {later} iterations after the warm-up, so they read such a cell's steady state near its "
            f"start, and a ratio with it on one side depends on how long the processes ran, unless the other side "
            f"moves alike (evidence/steady_drift.py reads it over campaigns; methodology §9).")


def replaced_note(result: Analysis) -> str | None:
    """What a budget that replaces dropped blocks ran beyond its plan (campaign/replace.py), benchmark by
    benchmark; None for a budget that does not."""
    options = result.campaign.options
    if not options.get("replace_dropped"):
        return None
    wanted = int(options["process_executions"])
    more: dict[str, int] = {}
    for c in result.cells:
        ran = c.executions_ok + len(c.failures)
        if ran > wanted:
            more[c.benchmark] = max(more.get(c.benchmark, 0), ran - wanted)
    said = (", ".join(f"{b} {k}" for b, k in more.items()) if more else "none was needed")
    return (f"This budget replaces blocks that count for no ratio (a member with no steady state) while a ratio "
            f"rests on fewer than {wanted} and both its sides settle in some, up to {wanted} more a benchmark; "
            f"blocks run beyond the plan: {said}.")


def modes_note(result: Analysis) -> str | None:
    """What the lock-step ratios with an interval from fewer than MODES_BLOCKS blocks cannot promise: where
    processes fall into speed modes, blocks that all drew one mode show nothing of the other."""
    few = [c.ratio.executions for c in _paired(result)
           if c.ratio and c.ratio.has_interval and c.ratio.executions is not None
           and c.ratio.executions < MODES_BLOCKS]
    if not few:
        return None
    k = min(few)
    return (f"Of these intervals, {len(few)} rest{'s' if len(few) == 1 else ''} on fewer than {MODES_BLOCKS} "
            f"blocks (the fewest: {k}). Where "
            f"processes fall into speed modes, as a JIT's often do, such an interval misses more often than its 1 %: "
            f"when every block drew the same mode nothing in them shows the other, and with two modes at even "
            f"odds {k} blocks all draw alike in {all_alike(k):.0%} of campaigns (methodology §13).")


def budget_words(result: Analysis) -> str:
    """The campaign that ran: its budget, the range of process executions a cell got (adaptive) and the
    iterations each made (sized per cell), and what was stored; every report says it in these words."""
    c = result.campaign
    o = c.options
    executions = (f"{o['process_executions']}–{o['max_process_executions']} (adaptive)"
                  if o.get("until_ci") is not None else f"{o['process_executions']}")
    sized = [r.iterations for r in result.check if r.iterations]
    size = (fmt.duration(o.get("execution_s") or 0, metric=result.metric) if result.metric == INSTRUCTIONS
            else f"{o.get('execution_s') or 0:g} s")
    if o.get("execution_s") and sized:
        made = f"{min(sized)}" if min(sized) == max(sized) else f"{min(sized)}–{max(sized)}"
        iterations = (f"{made} iterations (sized per cell to about {size} an execution, at least "
                      f"{o['min_iterations']}, at most {o['iterations']})")
    else:
        iterations = f"{o['iterations']} iterations"
    return (f"budget '{o['budget']}', {executions} process executions × {iterations}{later_words(result)}, "
            f"{c.executions_stored}/{c.executions_planned} executions stored")


def later_words(result: Analysis) -> str:
    """What the executions after a cell's first ones made, when the budget shortens them (later_steady): a
    classified cell's, and those of cells too short to classify."""
    o = result.campaign.options
    if o.get("later_steady") is None:
        return ""

    def span(classified: bool) -> str:
        made = sorted({r.iterations for c in result.cells
                       if (c.classification not in (None, NOT_CLASSIFIED)) == classified
                       for r in c.per_execution if r.pexec >= o["process_executions"]})
        return "none ran" if not made else f"{made[0]}" if len(made) == 1 else f"{made[0]}–{made[-1]}"

    return (f"; a classified cell's later ones its benchmark's warm-up and {o['later_steady']} more: "
            f"{span(True)} iterations, an unclassified cell's its first and as many as take as long as "
            f"{o['later_steady']} of those: {span(False)}")


def budget_line(result: Analysis) -> str:
    c = result.campaign
    ratios = ratio_methods(result)
    pairing = pairing_words(result)
    return (f"campaign {c.id} of {c.study} ({c.state}): {budget_words(result)}; "
            f"git {c.git_sha[:12]}; machine {c.machine}; steady state: {steady_words(result)}"
            + (f"; ratios: {ratios}" if ratios else "")
            + (f"; pairing: {pairing}" if pairing else ""))


def metric_line(result: Analysis) -> str | None:
    """For counted campaigns: what was counted, under what, and what counts leave out (instructions.py)."""
    if result.metric != INSTRUCTIONS:
        return None
    p = result.campaign.options.get("counting") or {}
    return (f"metric: instructions executed (Ir) per iteration, counted by {p.get('tool', 'callgrind')} "
            f"({p.get('valgrind', 'valgrind')}) on {p.get('cpu', 'an unrecorded CPU')}, address-space "
            f"randomisation {p.get('aslr', 'off')}, glibc's routines pinned ({p.get('glibc_tunables', '?')}), "
            + (f"GODEBUG={p['godebug']}, " if p.get("godebug") else "")
            + (f"GOMAXPROCS={p['gomaxprocs']}, " if p.get("gomaxprocs") else "") +
            f"argv and environment padded to {p.get('stack_bytes', '?')} bytes, wall clock "
            f"{p.get('wall_clock', 'running')}. Counts leave out system calls "
            "and the kernel, waiting (I/O, locks, page faults), and what caches, memory and branch prediction "
            "do to time: a ratio of counts is not a ratio of times.")


BESIDE_COLUMNS = ("Benchmark", "Mechanism", "Count ratio", "Time ratio (99% CI)", "Count / time",
                  "Time's interval holds the count ratio")


def beside_line(result: Analysis) -> str | None:
    """For counted campaigns: which timed campaign the count ratios are set beside, and how well they agree
    (time_beside_counts.py); or why there is none."""
    if result.metric != INSTRUCTIONS:
        return None
    b = result.beside_time
    if b is None:
        return ("counts beside time: no finished timed campaign of this study in this store ran the same "
                "benchmarks at the same parameters on this machine (those counted here: a benchmark's count_param "
                "where it has one and the budget counted there, which a budget with count_sizes = true times; "
                "else its param, which any timed campaign times)")
    if not b.pairs:
        return f"counts beside time (timed campaign {b.campaign}): no cell has a ratio in both"
    return f"counts beside time (timed campaign {b.campaign}, {len(b.pairs)} cells): {agreement(b)}"


def agreement(b: BesideTime) -> str:
    """How well a set of count ratios agrees with the time ratios beside them, in words."""
    median, most = b.off() or (0.0, 0.0)
    held, with_interval = b.held()
    rho = (f"Spearman's rank correlation {b.spearman:.3f}" if b.spearman is not None
           else "too few cells for a rank correlation")
    line = f"{rho}; count/time off 1 by {median:.1%} at the median cell and {most:.1%} at most"
    if with_interval:
        line += f"; the time ratio's 99% interval holds the count ratio in {held} of {with_interval}"
    return line


def beside_rows(result: Analysis) -> list[tuple[str, ...]]:
    b = result.beside_time
    if b is None:
        return []
    labels = result.labels
    return [(p.benchmark, labels.get(p.mechanism, p.mechanism), fmt.times(p.count_ratio, 6),
             fmt.ratio(p.time_ratio), fmt.times(p.quotient, 3),
             ("yes" if p.time_ratio.holds(p.count_ratio) else "no") if p.time_ratio.has_interval else "no interval")
            for p in b.pairs]


JIT_NOTE = ("Recorded by the Lua probe on LuaJIT with its JIT on: traces completed and aborted in each process "
            "execution, and a trace signature (where its traces started). Executions with one signature compiled "
            "the same traces; the last column says how much of the spread of the executions' steady speeds lies "
            "between signature groups (η², beside what a random grouping would give).")

JIT_COLUMNS = ("Benchmark", "Mechanism", "Signatures / executions", "Traces (median)", "Aborts (median)",
               "Most frequent abort reasons", "Speed and trace signatures")


def jit_rows(result: Analysis) -> list[tuple[str, ...]]:
    """Per cell with LuaJIT's records (jitdiag.py): what its compiler did, and whether its executions' speeds
    follow their trace signatures."""
    return [(c.benchmark, result.label(c.mechanism), f"{c.jit.signatures} / {c.jit.executions}",
             f"{c.jit.traces_median:g}", f"{c.jit.aborts_median:g}", jitdiag.top_reasons(c.jit.abort_reasons),
             c.jit.words()) for c in result.cells if c.jit]


def deltas_by_length(table: Iterable[Sequence]) -> str:
    """A calibrated δ table in words: each length's δ, and where even that δ left too few executions flat."""
    return ", ".join(f"{d:.1%} ({significant(s, 2)} s{'' if reached else ', not reached: too few flat even so'})"
                     for s, d, reached in table)


def delta_words(options: dict) -> str:
    """The δ the campaign's warm-up classification used, and where it came from."""
    delta = options.get("delta_relative", DEFAULT_DELTA_RELATIVE)
    when = options.get("delta_calibrated")
    table = options.get("delta_by_length") or ()
    if when and table:
        return (f"segments within δ the same, δ by execution length: {deltas_by_length(table)}, each execution's "
                f"from the length nearest its own (this machine's, calibrated {when})")
    return (f"segments within δ {delta:.1%} the same (this machine's, calibrated {when})" if when
            else f"segments within δ {delta:.1%} the same (the default: this machine was not calibrated)")


def headline_lines(result: Analysis) -> list[str]:
    """The study's question answered in words: each mechanism against the baseline, one line each, the
    study's headline mechanism first (question.py)."""
    base = result.baseline
    if not base:
        return []
    lines = []
    for mechanism in answer_order(result):
        answers = [(c.benchmark, question.answer(c.ratio, result.equivalence)) for c in result.cells
                   if c.mechanism == mechanism]
        if answers:
            sizes = {c.benchmark: c.ratio.value for c in result.cells if c.mechanism == mechanism and c.ratio}
            lines.append(question.summary(result.label(mechanism), result.label(base), answers,
                                          result.equivalence, result.confidence, sizes))
    return lines


def answer_order(result: Analysis) -> list[str]:
    """The mechanisms compared with the baseline, the study's headline mechanism first."""
    order = [m.mechanism for m in result.mechanisms if m.available and m.mechanism != result.baseline
             and any(c.mechanism == m.mechanism for c in result.cells)]
    if result.headline in order:
        order.remove(result.headline)
        order.insert(0, result.headline)
    return order


def interval_words(result: Analysis) -> str:
    """At what confidence the ratios' intervals are: the study's, or more where an adaptive budget looked
    several times."""
    pct = f"{result.confidence:.0%}"
    if result.looks > 1:
        return (f"{result.interval_confidence:.2%}, so that it holds with {pct} at whichever of "
                f"{result.looks} looks stopped it")
    return pct


def verdict(result: Analysis, cell: Cell) -> str:
    """A cell's ratio to the baseline as the headline judges it: faster, slower, equivalent or undecided."""
    return question.answer(cell.ratio, result.equivalence).state


def verdict_cell(result: Analysis, cell: Cell | None) -> str:
    """A ratio to the baseline as the headline judges it: the verdict word and the ratio ("slower ×3.79")."""
    if cell is None or cell.ratio is None:
        return "—"
    return f"{verdict(result, cell)} {fmt.times(cell.ratio.value, 6 if result.metric == INSTRUCTIONS else 3)}"


def verdict_grid(result: Analysis) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The answer at a glance: one row per benchmark, one column per mechanism compared with the baseline
    (named as in the study file, the headline's first), each cell its verdict and ratio."""
    order = answer_order(result)
    cells = {(c.benchmark, c.mechanism): c for c in result.cells}
    benchmarks = list(dict.fromkeys(c.benchmark for c in result.cells))
    return (("Benchmark", *order),
            [(b, *(verdict_cell(result, cells.get((b, m))) for m in order)) for b in benchmarks])


UNSEPARATED = 1.5  # an unclassified execution's first iteration this many times the others': a warm-up


def per_call_line(result: Analysis) -> str | None:
    """Which cells' figures are per call: an iteration made a batch of calls and its time was divided."""
    batches: dict[int, list[str]] = {}
    for c in result.cells:
        sizes = {r.batch for r in c.per_execution if r.batch > 1}
        if sizes:
            batches.setdefault(max(sizes), []).append(f"{c.benchmark} on {result.label(c.mechanism)}")
    if not batches:
        return None
    return ("figures are per call where an iteration made a batch of calls: "
            + "; ".join(f"{', '.join(cells)} (batch of {n})" for n, cells in sorted(batches.items())))


def unseparated_line(result: Analysis) -> str | None:
    """Cells too short for changepoints whose first iteration stands out: it is left out there, but a warm-up
    longer than one iteration (set-up spread over the first calls) would raise the mean unseen."""
    flagged = []
    for c in result.cells:
        ratios = [r.first_ratio for r in c.per_execution if r.first_ratio is not None]
        if ratios and max(ratios) >= UNSEPARATED:
            flagged.append(f"{c.benchmark} on {result.label(c.mechanism)} ({fmt.times(max(ratios), 2)})")
    if not flagged:
        return None
    return (f"a warm-up this budget is too short to separate: the first iteration took at least {UNSEPARATED:g}× "
            f"the others' median in {', '.join(flagged)}; it is left out, and a warm-up longer than one iteration "
            "would be counted (more iterations, or setup outside the timed call, separate it)")


def few_executions_line(result: Analysis) -> str | None:
    """Say how many cells have an estimate and no interval, because too few process executions ran."""
    cells = [c for c in result.cells if c.steady_performance]
    few = [c for c in cells if not c.steady_performance.has_interval]  # type: ignore[union-attr]
    if not few:
        return None
    return (f"{len(few)} of {len(cells)} cells have fewer than {MIN_EXECUTIONS} process executions: their figures "
            "are estimates with no interval (too few process executions to say how much the next one could "
            "differ; docs/methodology.md §6). More process executions, not more iterations, give them one")


def raised_line(earlier: tuple[float, ...]) -> str:
    """What a campaign's time cap was before `run --resume --max-time` raised it, if it was."""
    if not earlier:
        return ""
    caps = ", then ".join(f"{s:g} s" for s in earlier)
    return f" ({caps} until resumed with more time: `run --resume --max-time`)"


def adaptive_line(result: Analysis) -> str | None:
    """What an adaptive budget did (and, where cells stopped out of time, how to give them more), then the rule it
    followed: the outcome first."""
    a = result.adaptive
    if not a:
        return None
    states = ", ".join(f"{n} {s}" for s, n in sorted(a.states.items()))
    outcome = (f"adaptive budget: {a.rounds} round{'s' if a.rounds != 1 else ''} judged, then {states}; "
               f"{a.first_process_executions} to at most {a.max_process_executions} process executions a cell, "
               f"at most {a.max_time_s:g} s of executions in all{raised_line(a.earlier_max_time_s)}.")
    timed_out = a.states.get(OUT_OF_TIME, 0)
    if timed_out:  # what more time would take, in the command that gives it (engine.resumable)
        outcome += (f" `bridgebench run {result.campaign.study} --resume --max-time T`, T above {a.max_time_s:g} s, "
                    f"gives the {timed_out} cell{'s' if timed_out != 1 else ''} stopped out of time more.")
    pct = f"{result.confidence:.0%}"
    if not a.until_decided:
        return f"{outcome} Each cell ran until its {pct} CI was within ±{a.until_ci:.1%} and its class held."
    within = f" with its interval within ±{a.decided_within:.0%}" if a.decided_within else ""
    at = f", judged at {', '.join(map(str, a.look_points))} process executions" if a.look_points else ""
    looks = (f" (every interval at {result.interval_confidence:.2%}, so that it holds with {pct} at whichever of "
             f"a cell's {result.looks} looks stopped it)" if result.looks > 1 else "")
    nearest = ("; when the time left could not decide every open ratio as they stood, the benchmarks nearest an "
               "answer had the blocks first and the others waited" if result.campaign.options.get("nearest_first")
               else "")
    return (f"{outcome} Each ratio to {result.label(result.baseline)} ran until decided: equivalent within "
            f"±{result.equivalence:.0%}, or faster or slower{within}{at}{looks}; a cell without a ratio until its "
            f"{pct} CI was within ±{a.until_ci:.1%}{nearest}.")


def more_time_line(result: Analysis) -> str | None:
    """What more time would decide, where ratios stopped out of time (more_time.py): each benchmark's projected
    blocks and seconds, nearest first, and the time cap that gives them all."""
    projections = list(result.more_time)
    if not projections:
        return None
    near = [p for p in projections if p.state == more_time.PROJECTED]
    shown = "; ".join(f"{p.benchmark} at {p.blocks} blocks, about {fmt.duration(p.seconds, 2)} more "
                      f"({_seconds_range(p.seconds_low, p.seconds_high)})" for p in near)
    rest = "; ".join(f"{p.benchmark} {p.state} as it stands ({p.why})" if p.state == more_time.OUT_OF_REACH
                     else f"{p.benchmark} {p.state} ({p.why})" for p in projections if p.state != more_time.PROJECTED)
    cap = more_time.max_time(result, projections)
    whose = "it its" if len(near) == 1 else f"these {len(near)} benchmarks their"
    low = sum(p.seconds_low or 0.0 for p in near)
    highs = [p.seconds_high for p in near if p.seconds_high is not None]
    ends = (f"{_seconds_range(low, sum(highs))} at the ends of the spreads' intervals" if len(highs) == len(near) else
            f"from {fmt.duration(low, 2)} at the low ends of the spreads' intervals; at the high ends "
            f"{len(near) - len(highs)} of them out of reach")
    give = (f" `bridgebench run {result.campaign.study} --resume --max-time {cap:g}` would give {whose} "
            f"{fmt.duration(more_time.seconds_more(near), 2)} ({ends})." if cap is not None else "")
    within = more_time.within_share(result)
    whose_noise = ("" if within is None else
                   f" The noise within blocks made up {_within_pct(within)} of these ratios' spread between blocks "
                   f"(the median of their shares within, in the lock-step table): " + (
                       "most of it, so a quieter machine or hour would decide them sooner (more rounds a block "
                       "would narrow each block's value, at about the time the blocks they spare would take: "
                       "methodology §13, \"Rounds a later block\"). `bridgebench doctor` says how much of the "
                       "machine's shared cache the host's other tenants hold now, a noise taking turns cannot "
                       "cancel (methodology §13, \"The shared cache\")."
                       if within >= 0.5 else
                       "less than half, so the processes' own differences hold them, and only more blocks decide "
                       "them."))
    return (f"More time, projected from each ratio stopped out of time as it stands (its estimate and spread "
            f"between blocks held, judged at its next look past the count that would decide it; in brackets, the "
            f"same at either end of the spread's {more_time.SPREAD_CONFIDENCE:.0%} interval over its blocks, the "
            f"estimate held: a projection, not a promise): {shown}{'; ' if shown and rest else ''}{rest}.{give}"
            f"{whose_noise}")


def _seconds_range(low: float | None, high: float | None) -> str:
    """A projection's seconds at the ends of its spreads' intervals; out of reach past the cap."""
    low_s = fmt.duration(low or 0.0, 2)
    return f"{low_s} to {fmt.duration(high, 2)}" if high is not None else f"{low_s}, or out of reach"


def unsettled_rows(result: Analysis) -> list[tuple[str, str, str, str]]:
    """The cells an adaptive budget left unsettled, and why (benchmark, mechanism, state, reason)."""
    return [(c.benchmark, result.label(c.mechanism), c.adaptive.state, c.adaptive.reason) for c in result.cells
            if c.adaptive and c.adaptive.state != SETTLED]



# --- a campaign run by more than one machine (a fleet) ------------------------------------------------------
MACHINE_COLUMNS = ("Machine", "CPU", "Cores", "Memory (GiB)", "Kernel", "Executions")
MACHINE_CELL_COLUMNS = ("Benchmark", "Mechanism", "Per machine: steady perf (99% CI), executions", "Machines",
                        "Why")


def machine_rows(result: Analysis) -> list[tuple[str, ...]]:
    counts: dict[str, int] = {}
    for cell in result.cells:
        for run in cell.per_execution:
            counts[run.machine] = counts.get(run.machine, 0) + 1
    return [(m, str(env.get("cpu_model", "?")), str(env.get("cpu_count", "?")), str(env.get("memory_gib", "?")),
             str(env.get("kernel", "?")), str(counts.get(m, 0))) for m, env in result.machines.items()]


def machine_cell_rows(result: Analysis) -> list[tuple[str, ...]]:
    """Per benchmark × mechanism: each machine's steady performance, and whether the machines agree."""
    return [(c.benchmark, result.label(c.mechanism),
             "; ".join(f"{m.machine}: {fmt.estimate(m.steady_performance)} ({m.executions})" for m in c.machines),
             c.machines_verdict or "", c.machines_reason) for c in result.cells if c.machines]


# --- a cell in words ---------------------------------------------------------------------------------
def classification(cell: Cell) -> str:
    name = cell.classification
    if name is None:
        return "—"
    shown = CLASS_SYMBOL.get(name, name)
    if name in (GOOD_INCONSISTENT, BAD_INCONSISTENT) and cell.class_counts:
        shown += " (" + ", ".join(f"{n} {CLASS_SYMBOL.get(k, k)}" for k, n in sorted(cell.class_counts.items())
                                  if n) + ")"
    return shown


def class_text(cell: Cell) -> str:
    """The class with the executions behind it, spelled out (HTML): "warmup (5)", "bad inconsistent (…)"."""
    name = cell.classification
    if not name:
        return "not classified (run too short)" if cell.executions_ok else "no data"
    counts = {k: n for k, n in cell.class_counts.items() if n}
    if len(counts) > 1 or name in (GOOD_INCONSISTENT, BAD_INCONSISTENT):
        return f"{name} (" + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ")"
    return f"{name} ({sum(counts.values()) or cell.executions_ok})"


def failures(cell: Cell) -> str:
    kinds: dict[str, int] = {}
    for f in cell.failures:
        kinds[f.status] = kinds.get(f.status, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in kinds.items())
