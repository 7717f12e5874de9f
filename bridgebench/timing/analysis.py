"""From the store to results: per benchmark × mechanism, warm-up classes, steady state and its CI, the
ratio to the baseline mechanism, and what failed. The result is one typed value (result.Analysis), cached in
the store and only read by every report, export and diff.

Each rule lives here once: seconds per call (per_call), which iterations are steady (Run.steady_mask, set
from the classification), the majority answer (majority.majority), and the ratio of two cells (ratio_between,
with a random stream fixed by the pair, so a report and a diff print the same CI for the same pair).

Cells are independent, so a large campaign is analysed a benchmark at a time by a pool of processes, each
reading its own iterations; every cell's random stream depends only on the seed and the cell, so the result
is the same whatever the number of processes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from multiprocessing import get_context
from typing import Any, NamedTuple

import numpy as np

from bridgebench import audit
from bridgebench.instructions import INSTRUCTIONS, analysed
from bridgebench.instructions import SECONDS as SECONDS_METRIC
from bridgebench.majority import majority
from bridgebench.options import DeltaTable, TimingOptions, delta_for, read
from bridgebench.result import (
    BuiltMechanism,
    CampaignFacts,
    CheckAnswer,
    Failure,
    cached,
    with_decisions,
)
from bridgebench.runner import OK
from bridgebench.stats import (
    Estimate,
    ExecutionClass,
    classify_benchmark,
    classify_execution,
    summarise,
    too_short_for_changepoints,
)
from bridgebench.stats.classify import DEFAULT_DELTA_RELATIVE, FLAT, RULES_VERSION, WARMUP, from_record, to_record
from bridgebench.stats.drift import steady_drift
from bridgebench.stats.executions import each_look, ratio_over_executions
from bridgebench.stats.lockstep import LOCKSTEP_METHOD, lockstep_ratio, spread
from bridgebench.stats.paired import paired_ratio
from bridgebench.stats.summary import NOT_CLASSIFIED, unclassified_outliers, unclassified_start, warmup_length
from bridgebench.store import SECONDS, Store, StoredExecution, StoreError, StoreWriteError
from bridgebench.study import DEFAULT_EQUIVALENCE
from bridgebench.timing import jitdiag, more_time, time_beside_counts
from bridgebench.timing.diff_rules import CLAIMS, compare_cells
from bridgebench.timing.lockstep import TWIN_TIMES
from bridgebench.timing.result import Analysis, AuditSummary, Cell, MachineCell, Run, SegmentMean, Workload

WRONG_ANSWER = "wrong answer"
CONSISTENT, DISTINGUISHABLE = "consistent", "distinguishable"  # machines' verdicts
REPORTED_COUNTERS = ("bytes_per_op", "allocs_per_op", "heap_kb")
STOLEN_SHARE = 0.10  # an iteration whose wall time exceeds its CPU time by more than this lost time to others
CPU_COUNTER = "cpu_s"  # the probe's own CPU time per iteration, where it can read a CPU clock
PARALLEL_FROM_ITERATIONS = 200_000  # below this a process pool costs more than it saves
CONFIDENCE = 0.99  # what every interval of a report claims


def per_call(times: np.ndarray, batch: int | None) -> np.ndarray:
    """Stored times are per iteration of `batch` calls; every figure bridgebench shows is per call."""
    return times / batch if batch and batch > 1 else times


def _series_name(metric: str) -> str:
    """The stored series a metric's iterations are: the probe's times, or the counts a counted run added."""
    return INSTRUCTIONS if metric == INSTRUCTIONS else SECONDS


def _in_unit(values: np.ndarray, metric: str) -> np.ndarray:
    """A metric's stored values in the unit the analysis takes: seconds, or instruction counts in billions
    (counting.analysed), so the method's scale-bound parts (a segment's variance used as a width,
    methodology §3) act on counts as on the seconds of a machine doing one instruction a nanosecond."""
    return analysed(values) if metric == INSTRUCTIONS else values


def metric_series(store: Store, execution_id: int, metric: str) -> np.ndarray:
    """One execution's iterations of the metric, in the unit the analysis takes."""
    return _in_unit(store.counter(execution_id, _series_name(metric)), metric)


def _stream(seed: int, *parts: object) -> np.random.Generator:
    """A random stream fixed by the seed and what it is for (a cell, a pair of cells): the same numbers
    however many processes analyse, and in whatever order."""
    return np.random.default_rng([seed, *(zlib.crc32(repr(p).encode()) for p in parts)])


class Side(NamedTuple):
    """One execution's share of a ratio: its machine and steady iterations, and, when it ran in a lock-step
    block, the block and the mean of each round's turn in which every iteration was steady."""

    machine: str
    steady: np.ndarray
    block: str | None = None
    turns: dict[int, float] = {}  # noqa: RUF012 (never mutated: a NamedTuple's default)
    turn: int = 1  # iterations a turn
    beside: bool = False  # it took its turns beside other members, in one unit: at once, or one iteration each
    twin_turns: dict[int, float] = {}  # noqa: RUF012 (a solo twin's turns beside its twin, by round, where its
    #                                    turns alone were steady)


Rounds = dict[int, Side]  # per round (pexec)

PAIRED_MIN_ROUNDS = 5
"""Fewest shared rounds for a paired ratio; below, Welch's t over the two sides' executions. Pairing removes
a drift the rounds share but spends degrees of freedom (docs/methodology.md §6, evidence/pairing.py
--simulate). The rule looks at the number of rounds only, never at which interval is narrower."""


def ratio_between(samples_a: Rounds, samples_b: Rounds, *, confidence: float, same_campaign: bool) -> Estimate:
    """B's steady performance over A's with its CI.

    Two cells of one campaign that shared lock-step blocks: Student's t over the blocks of each block's mean
    log ratio (lockstep_blocks, stats.lockstep). Two cells of one campaign that ran interleaved: round r of A
    and round r of B are neighbours in time. When at least PAIRED_MIN_ROUNDS rounds have both, each on one
    machine, the ratio is paired by round over those rounds (stats.paired_ratio; executions in a round only one
    side has are left out of it). Otherwise, and across campaigns, it is Welch's t over the two sides' process
    executions (their steady means, log scale), with no interval when a side has fewer than
    stats.executions.MIN_EXECUTIONS.
    Neither rule resamples, so a report and a diff print the same interval for the same pair."""
    blocks = lockstep_blocks(samples_a, samples_b) if same_campaign else {}
    return ratio_of(samples_a, samples_b, blocks, confidence=confidence, same_campaign=same_campaign)


def ratio_of(samples_a: Rounds, samples_b: Rounds, blocks: dict[str, tuple[list[float], list[float]]], *,
             confidence: float, same_campaign: bool) -> Estimate:
    """ratio_between with the pair's lock-step blocks already found (lockstep_blocks; empty across campaigns),
    for a caller that uses them again."""
    if blocks:
        return lockstep_ratio(list(blocks.values()), confidence=confidence)
    shared = sorted(set(samples_a) & set(samples_b))
    if (same_campaign and len(shared) >= PAIRED_MIN_ROUNDS
            and all(samples_a[r][0] == samples_b[r][0] for r in shared)):
        return paired_ratio([samples_a[r].steady for r in shared], [samples_b[r].steady for r in shared],
                            confidence=confidence)
    return ratio_over_executions([float(np.mean(s.steady)) for s in samples_a.values()],
                                 [float(np.mean(s.steady)) for s in samples_b.values()], confidence=confidence)


def lockstep_blocks(samples_a: Rounds, samples_b: Rounds) -> dict[str, tuple[list[float], list[float]]]:
    """The turn means of the rounds where both sides were steady, in every block both sides ran in, by the block's
    token (in the order of the campaign's rounds). A solo twin's side (lockstep.py) is its turns beside its twin
    where the other took its turns in one unit with it (at the same time, or interleaved), else its turns alone."""
    out = {}
    for r in sorted(set(samples_a) & set(samples_b)):
        a, b = samples_a[r], samples_b[r]
        if a.block is None or a.block != b.block:
            continue
        turns_a = a.twin_turns if a.twin_turns and b.beside else a.turns
        turns_b = b.twin_turns if b.twin_turns and a.beside else b.turns
        both = sorted(set(turns_a) & set(turns_b))
        if both:
            out[a.block] = ([turns_a[i] for i in both], [turns_b[i] for i in both])
    return out


class Series:
    """A campaign's stored iterations of its metric, per call, for the renderers that draw or export them,
    and for the diff: read back with the rules the analysis used."""

    def __init__(self, store: Store, metric: str = SECONDS_METRIC) -> None:
        self.store, self.metric = store, metric

    def times(self, run: Run) -> np.ndarray:
        return per_call(metric_series(self.store, run.execution_id, self.metric), run.batch)

    def counter(self, run: Run, name: str) -> np.ndarray:
        return self.store.counter(run.execution_id, name)

    def steady(self, runs: Sequence[Run]) -> Rounds:
        """The steady iterations of each run that has more than one (those the ratio resamples), by round."""
        return steady_rounds(runs, [self.times(r) for r in runs])


def steady_rounds(runs: Sequence[Run], times: Sequence[np.ndarray]) -> Rounds:
    kept = {r.pexec: _side(r, t) for r, t in zip(runs, times, strict=True)}
    return {k: v for k, v in kept.items() if len(v.steady) > 1}


def _side(run: Run, times: np.ndarray) -> Side:
    mask = run.steady_mask()
    if run.block is None:
        return Side(run.machine, times[mask])
    turn, lead = max(1, run.turn), run.lead
    turns = {r: float(np.mean(times[lead + r * turn:lead + (r + 1) * turn])) for r in range((len(times) - lead) // turn)
             if mask[lead + r * turn:lead + (r + 1) * turn].all()}
    # a turn of no time has no log ratio (a coarse clock's zeros; a CPU time read before it was booked): it counts
    # for no ratio, as a turn that was not steady
    twin_turns = {}
    if run.twin_times:  # a solo baseline's turns beside its twin, in the rounds its turns alone were steady
        twin = np.asarray(run.twin_times, dtype=float) / max(1, run.batch)
        twin_turns = {r: float(np.mean(twin[r * turn:(r + 1) * turn])) for r in turns if (r + 1) * turn <= len(twin)}
    return Side(run.machine, times[mask], run.block, {r: m for r, m in turns.items() if m > 0}, turn,
                run.together or run.interleaved,
                {r: m for r, m in twin_turns.items() if m > 0})


# --- one benchmark × mechanism ---------------------------------------------------------------------------
def rules(delta_relative: float, metric: str = SECONDS_METRIC) -> str:
    """The key a classification is kept under: the rules' version, the δ when it is not the default, and
    the metric when it is not time."""
    key = RULES_VERSION if delta_relative == DEFAULT_DELTA_RELATIVE else f"{RULES_VERSION} δ={delta_relative:g}"
    return key if metric == SECONDS_METRIC else f"{key} {metric}"


def _classify(store: Store, executions: Sequence[StoredExecution], arrays: list[np.ndarray],
              deltas: Sequence[float], metric: str = SECONDS_METRIC) -> list[ExecutionClass | None]:
    """Each execution's classification, with its own δ (by its length, TimingOptions.delta_for): made once
    per execution, rules version and δ, kept in the store, and read back after that (a re-judged campaign
    classifies only its new executions). None for an execution too short for changepoints."""
    if all(too_short_for_changepoints(len(t)) for t in arrays):
        return [None] * len(arrays)
    keys = [rules(d, metric) for d in deltas]
    kept: dict[int, dict] = {}
    for key in set(keys):
        kept.update(store.execution_classes([e.id for e, k in zip(executions, keys, strict=True) if k == key], key))
    out: list[ExecutionClass | None] = []
    made: dict[str, dict[int, dict]] = defaultdict(dict)
    for e, t, delta, key in zip(executions, arrays, deltas, keys, strict=True):
        record = kept.get(e.id)
        if too_short_for_changepoints(len(t)):
            out.append(None)
        elif record is not None and record["n"] == len(t):
            out.append(from_record(record))
        else:
            quantum = analysed(1) / (e.batch or 1) if metric == INSTRUCTIONS else None  # one instruction
            cls = classify_execution(t, delta_relative=delta, quantum=quantum)
            out.append(cls)
            made[key][e.id] = to_record(cls)
    with contextlib.suppress(StoreWriteError):  # a cache: a store that cannot take it still analyses
        for key, records in made.items():
            store.save_execution_classes(key, records)
    return out


def _run(e: StoredExecution, times: np.ndarray, cls: ExecutionClass | None,
         counters: dict[str, np.ndarray], machine: str, timed: bool = True, warmup: int | None = None) -> Run:
    """One execution as the report shows it. `warmup`: the warm-up length of its cell's classified executions
    (summary.warmup_length), where an unclassified one's steady state starts; None: no execution of the cell
    is classified, so its iterations count from its second (summary.unclassified_start), and its first one
    is compared with the rest."""
    n = len(times)
    if cls is None:
        skip = unclassified_start(warmup, n)
        outliers = unclassified_outliers(times, skip)
        ranges: tuple[tuple[int, int], ...] = ((skip, n),)
        segments: tuple[SegmentMean, ...] = ()
    else:
        outliers = cls.outliers
        ranges = tuple((s.start, s.end) for s in cls.steady_segments)
        steady = set(cls.steady_segments)
        segments = tuple(SegmentMean(s.start, s.end, s.mean, s in steady) for s in cls.segments)
    mask = np.zeros(n, dtype=bool)
    for start, end in ranges:
        mask[start:end] = True
    mask &= ~outliers
    cpu = counters.get(CPU_COUNTER)
    stolen = None
    if timed and cpu is not None and len(cpu) == n:  # time the machine took away: wall time only
        stolen = int(np.sum(times - per_call(cpu, e.batch) > STOLEN_SHARE * times))
    means = {name: float(np.mean(v[mask])) for name, v in counters.items()
             if name in REPORTED_COUNTERS and len(v) == n and mask.any()}
    return Run(
        execution_id=e.id, pexec=e.pexec, iterations=n, batch=e.batch or 1,
        kind=cls.kind if cls else None, disturbed=e.disturbed, stolen_iterations=stolen,
        steady_iteration=cls.steady_iteration if cls else None,
        steady_start=cls.steady_segments[0].start if cls and cls.steady_segments else None,
        changepoints=tuple(s.start for s in cls.segments[1:]) if cls else (),
        segments=segments, steady_ranges=ranges, outliers=tuple(int(i) for i in np.flatnonzero(outliers)),
        steady_mean=float(np.mean(times[mask])) if mask.any() else None, counters=means,
        machine=e.machine or machine, jit=jitdiag.record(e.info_json), **_pairing(e.info_json),
        first_ratio=_first_ratio(times) if cls is None and warmup is None else None)


def _first_ratio(times: np.ndarray) -> float | None:
    """An unclassified execution's first iteration over the median of the others (a warm-up too short a
    budget cannot separate shows as well above 1)."""
    rest = float(np.median(times[1:])) if len(times) > 2 else 0.0
    return float(times[0]) / rest if rest > 0 else None


def _stored_pairing(info_json: str | None) -> dict[str, Any]:
    """What the harness stored of an execution's lock-step block ({} for one that ran alone)."""
    pairing = json.loads(info_json).get("pairing") if info_json else None
    return pairing if isinstance(pairing, dict) else {}


def _pairing(info_json: str | None) -> dict[str, Any]:
    """The lock-step block an execution ran in and its turn, from what the harness stored with it."""
    pairing = _stored_pairing(info_json)
    if not isinstance(pairing.get("block"), str) or pairing.get("members", 0) < 2:
        return {}
    twin = pairing.get(TWIN_TIMES)
    return {"block": pairing["block"], "turn": int(pairing.get("turn") or 1), "lead": int(pairing.get("lead") or 0),
            "threads": int(pairing.get("threads") or 1), "processes": int(pairing.get("processes") or 1),
            "round_s": float(pairing["round_s"]) if isinstance(pairing.get("round_s"), int | float) else None,
            "together": pairing.get("together") is True,
            "interleaved": isinstance(pairing.get("interleaved_with"), int) and pairing["interleaved_with"] > 0,
            "twin_times": tuple(float(t) for t in twin) if isinstance(twin, list) else ()}


def _counter_means(counters: list[dict[str, np.ndarray]]) -> dict[str, float]:
    """Per counter the probe reported (B/op, allocs/op, heap KB…), the mean over all iterations. The mean,
    not the median: Go books small allocations a span at a time, so with few calls per iteration most
    iterations read 0 and a few read a span's worth; only the mean adds up to what was allocated."""
    out = {}
    for name in REPORTED_COUNTERS:
        values = [c[name] for c in counters if len(c.get(name, ()))]
        if values:
            out[name] = float(np.mean(np.concatenate(values)))
    return out


def _setup_median(executions: list[StoredExecution]) -> float | None:
    """Start-up (load, spawn, instantiate: the probe's setup_s), the median over executions."""
    values = [json.loads(e.info_json).get("setup_s") for e in executions if e.info_json]
    values = [v for v in values if isinstance(v, int | float)]
    return float(np.median(values)) if values else None


@dataclass(frozen=True)
class _CellInput:
    """What the parent process decided about a cell before its iterations are read."""

    benchmark: str
    mechanism: str
    good: tuple[StoredExecution, ...]  # the executions that count
    failures: tuple[Failure, ...]
    peak_rss_kb: float | None
    disturbed: int
    excluded: int
    machine: str  # the campaign's own machine: the one that ran an execution that names none
    delta_relative: float = DEFAULT_DELTA_RELATIVE  # the campaign's δ for the warm-up classification…
    delta_by_length: DeltaTable = ()  # …or, calibrated, each execution's by its length (options.delta_for)
    metric: str = SECONDS_METRIC  # what the iterations measure (counting.METRICS)
    first: int = 0  # the budget's first process executions a cell (its later ones may be shorter)
    later: int | None = None  # later_steady: a classified cell's later executions' steady iterations

    def deltas(self) -> list[float]:
        """The δ each good execution is classified with."""
        return [delta_for(e.wall_s, self.delta_by_length, self.delta_relative) for e in self.good]


def _read(store: Store, executions: Sequence[StoredExecution], metric: str = SECONDS_METRIC
          ) -> tuple[list[np.ndarray], list[dict[str, np.ndarray]]]:
    """Each execution's iterations of the metric, per call, in the unit the analysis takes, and its other
    counters (its wall times are not one of them)."""
    measured = _series_name(metric)
    data = store.series([e.id for e in executions], tuple(dict.fromkeys((measured, SECONDS, CPU_COUNTER,
                                                                         *REPORTED_COUNTERS))))
    by_execution: dict[int, dict[str, np.ndarray]] = defaultdict(dict)
    for (eid, name), values in data.items():
        by_execution[eid][name] = values
    arrays = [per_call(_in_unit(by_execution[e.id].pop(measured), metric), e.batch) for e in executions]
    for e in executions:
        by_execution[e.id].pop(SECONDS, None)
    return arrays, [by_execution[e.id] for e in executions]


def _analyse_cell(store: Store, c: _CellInput, confidence: float, seed: int) -> tuple[Cell, Rounds]:
    """The cell, and each execution's steady iterations by round (for the ratio)."""
    cell = Cell(c.benchmark, c.mechanism, len(c.good), c.failures, c.peak_rss_kb, c.disturbed, c.excluded)
    if not c.good:
        return cell, {}
    arrays, counters = _read(store, c.good, c.metric)
    classes = _classify(store, c.good, arrays, c.deltas(), c.metric)
    summary = summarise(arrays, classes=classes, confidence=confidence, rng=_stream(seed, "cell", c.benchmark,
                                                                                      c.mechanism))
    warmup = warmup_length(classes)
    runs = tuple(_run(e, t, cls, k, c.machine, c.metric == SECONDS_METRIC, warmup)
                 for e, t, cls, k in zip(c.good, arrays, classes, counters, strict=True))
    machines, verdict, reason = _by_machine(c, runs, arrays, classes, confidence, seed)
    cell = Cell(
        c.benchmark, c.mechanism, len(c.good), c.failures, c.peak_rss_kb, c.disturbed, c.excluded,
        counters=_counter_means(counters), setup_s=_setup_median(list(c.good)),
        classification=summary.classification, class_counts=dict(summary.class_counts),
        steady_iteration=summary.steady_iteration, steady_seconds=summary.steady_seconds,
        steady_performance=summary.steady_performance, method=summary.method, per_execution=runs,
        machines=machines, machines_verdict=verdict, machines_reason=reason, steady_bootstrap=summary.steady_bootstrap,
        jit=jitdiag.summarise([(r.jit, r.steady_mean) for r in runs if r.jit and r.steady_mean]),
        execution_s=_execution_s(c), steady_drift=_steady_drift(c, runs, arrays))
    return cell, steady_rounds(runs, arrays)


def _steady_drift(c: _CellInput, runs: Sequence[Run], arrays: Sequence[np.ndarray]) -> Estimate | None:
    """With later executions cut to `later` steady iterations: how the first executions' first that many steady
    iterations stand to their others (stats.drift), their outliers left out; None without later_steady."""
    if not c.later:
        return None
    steady = [steady_iterations(r, t) for r, t in zip(runs, arrays, strict=True) if r.pexec < c.first]
    return steady_drift([s for s in steady if s is not None], c.later, confidence=CONFIDENCE)


def steady_iterations(run: Run, times: np.ndarray) -> np.ndarray | None:
    """A classified execution's steady iterations as the analysis counts them (Run.steady_mask), in order; None
    for one that did not reach a steady state by warming up (or was flat), or was not classified."""
    if run.kind not in (FLAT, WARMUP):
        return None
    return times[run.steady_mask()]


def _execution_s(c: _CellInput) -> float:
    """What the cell's next execution would cost: the median wall time of those after its first ones (an
    adaptive budget may shorten those), or of all while there are none; a lock-step member's share of its
    block (lockstep.py)."""
    later = [e.wall_s for e in c.good if e.pexec >= c.first] or [e.wall_s for e in c.good]
    return float(np.median(later))


def _by_machine(c: _CellInput, runs: tuple[Run, ...], arrays: list[np.ndarray],
                classes: list[ExecutionClass | None], confidence: float, seed: int
                ) -> tuple[tuple[MachineCell, ...], str | None, str]:
    """With executions from more than one machine: each machine's share summarised as the cell is, and
    whether the machines can be told apart by the differ's rules (class shares by Goodman CIs, steady
    performance by non-overlapping CIs), every pair of machines compared."""
    names = sorted({r.machine for r in runs})
    if len(names) < 2:
        return (), None, ""
    shares = []
    for m in names:
        mine = [i for i, r in enumerate(runs) if r.machine == m]
        s = summarise([arrays[i] for i in mine], classes=[classes[i] for i in mine], confidence=confidence,
                      rng=_stream(seed, "machine", c.benchmark, c.mechanism, m))
        shares.append(MachineCell(m, len(mine), s.classification, dict(s.class_counts), s.steady_performance))
    for a, b in itertools.combinations(shares, 2):
        cell_a = Cell(c.benchmark, a.machine, a.executions, (), None, 0, 0, class_counts=a.class_counts,
                      steady_performance=a.steady_performance)
        cell_b = Cell(c.benchmark, b.machine, b.executions, (), None, 0, 0, class_counts=b.class_counts,
                      steady_performance=b.steady_performance)
        verdict = compare_cells(c.benchmark, a.machine, b.machine, cell_a, cell_b, None, confidence)
        if verdict.verdict in CLAIMS:
            return tuple(shares), DISTINGUISHABLE, f"{a.machine} vs {b.machine}: {verdict.reason}"
    return tuple(shares), CONSISTENT, "no two machines differ by the differ's rules"


def _analyse_benchmark(store: Store, campaign_id: int, inputs: list[_CellInput], baseline: str | None,
                       confidence: float, seed: int) -> list[Cell]:
    """One benchmark's cells, with their ratios to the baseline's cell."""
    done = [_analyse_cell(store, c, confidence, seed) for c in inputs]
    base = next((steady for cell, steady in done if cell.mechanism == baseline), None)
    out = []
    for c, (cell, steady) in zip(inputs, done, strict=True):
        ratio, within, between, share, turns, later, round_s = None, None, None, None, (), (), None
        if base and steady:
            blocks = lockstep_blocks(base, steady)
            ratio = ratio_of(base, steady, blocks, confidence=confidence, same_campaign=True)
            if ratio.method == LOCKSTEP_METHOD:
                shared = sorted(set(base) & set(steady))
                within, between, share = spread(list(blocks.values()))
                paired = [r for r in shared if base[r].block is not None and base[r].block == steady[r].block]
                turns = tuple(sorted({(base[r].turn, steady[r].turn) for r in paired}))
                later = tuple(sorted({(base[r].turn, steady[r].turn) for r in paired if r >= c.first}))
                lasted = [r.round_s for r in cell.per_execution if r.pexec in paired and r.round_s is not None]
                round_s = float(np.median(lasted)) if lasted else None
        out.append(replace(cell, ratio=ratio, ratio_within_sd=within, ratio_between_sd=between,
                           ratio_within_share=share, ratio_turns=turns, ratio_later_turns=later, ratio_round_s=round_s))
    return out


def _worker(location: str, campaign_id: int, inputs: list[_CellInput], baseline: str | None, confidence: float,
            seed: int) -> list[Cell]:
    store = Store(location, create=False)
    try:
        return _analyse_benchmark(store, campaign_id, inputs, baseline, confidence, seed)
    finally:
        store.close()


# --- the campaign ----------------------------------------------------------------------------------------
def _verdicts(executions: list[StoredExecution]) -> dict[int, tuple[str, str]]:
    """Per execution, its status and detail once answers are compared: a successful execution whose answer
    is not its benchmark's majority answer is a wrong answer."""
    answers: dict[str, list[str]] = defaultdict(list)
    for e in executions:
        if e.status == OK and e.answer is not None:
            answers[e.benchmark].append(e.answer)
    right = {bench: majority(a) for bench, a in answers.items()}
    out = {}
    for e in executions:
        status, detail = e.status, e.detail
        if status == OK and right.get(e.benchmark) is None:
            status, detail = WRONG_ANSWER, "the mechanisms' answers have no majority"
        elif status == OK and right[e.benchmark] != e.answer:
            status, detail = WRONG_ANSWER, f"answered {e.answer!r}, most gave {right[e.benchmark]!r}"
        out[e.id] = (status, detail)
    return out


def _cell_inputs(executions: list[StoredExecution], keys: Iterable[tuple[str, str]],
                 exclude_disturbed: bool, machine: str = "", options: TimingOptions | None = None
                 ) -> dict[tuple[str, str], _CellInput]:
    verdicts = _verdicts(executions)
    by_key: dict[tuple[str, str], list[StoredExecution]] = defaultdict(list)
    for e in executions:
        by_key[(e.benchmark, e.mechanism)].append(e)
    out = {}
    for key in keys:
        mine = by_key.get(key, [])
        failures = tuple(Failure(e.pexec, verdicts[e.id][0], verdicts[e.id][1], e.stderr_tail[-500:])
                         for e in mine if verdicts[e.id][0] != OK)
        ok = [e for e in mine if verdicts[e.id][0] == OK]
        good = tuple(e for e in ok if not (exclude_disturbed and e.disturbed))
        rss = [e.peak_rss_kb for e in mine if e.peak_rss_kb]
        out[key] = _CellInput(key[0], key[1], good, failures, float(np.median(rss)) if rss else None,
                              sum(1 for e in mine if e.disturbed), len(ok) - len(good), machine,
                              *((options.delta_relative, options.delta_by_length, options.metric,
                                 options.process_executions, options.later_steady) if options else ()))
    return out


def _audited_wall_s(e: StoredExecution) -> float:
    """The wall time its audit covered: a lock-step member's is its block's (the block is audited once and every
    member stores that audit, while its own wall_s is its share of the block's), anyone else's its own."""
    block = _stored_pairing(e.info_json).get("block_wall_s")
    return float(block) if isinstance(block, int | float) and block > 0 else e.wall_s


def _audit_summary(executions: list[StoredExecution], exclude_disturbed: bool) -> AuditSummary:
    """How many executions were audited and flagged, and the median and largest share of a core that
    others and steal took, each over the wall time its audit covered (as audit.judge reads it)."""
    audited = [(e, _audited_wall_s(e)) for e in executions if e.others_cpu_s is not None and e.wall_s > 0]
    others = [e.others_cpu_s / wall for e, wall in audited]  # type: ignore[operator]
    steal = [(e.steal_s or 0.0) / wall for e, wall in audited]

    def stat(values: list[float], f: object) -> float | None:
        return float(f(values)) if values else None  # type: ignore[operator]

    return AuditSummary(len(audited), sum(1 for e in executions if e.disturbed), exclude_disturbed,
                        stat(others, np.median), stat(others, np.max), stat(steal, np.median), stat(steal, np.max),
                        float(sum(e.waited_s or 0.0 for e in executions)), asdict(audit.DEFAULT))


def workers_for(iterations: int) -> int:
    """Processes to analyse with: one for small campaigns, else up to the CPUs this process may use
    (BRIDGEBENCH_ANALYSIS_WORKERS overrides)."""
    chosen = os.environ.get("BRIDGEBENCH_ANALYSIS_WORKERS")
    if chosen:
        return max(1, int(chosen))
    if iterations < PARALLEL_FROM_ITERATIONS:
        return 1
    return max(1, len(os.sched_getaffinity(0)))


def interval_looks(options: TimingOptions, baseline: str | None) -> int:
    """How many times the campaign's budget may have looked at each interval and stopped when it decided:
    a budget aimed at the question (adaptive.py) looks after every round, a fixed budget never."""
    adaptive = options.adaptive
    return adaptive.looks if adaptive and adaptive.until_decided and baseline else 1


def analyse(store: Store, campaign_id: int, *, confidence: float = CONFIDENCE, seed: int | None = None,
            exclude_disturbed: bool = False, workers: int | None = None) -> Analysis:
    """The campaign's analysis. Its intervals hold with `confidence` at whichever look its budget stopped:
    each is computed at each_look(confidence, looks). `seed` (default: the campaign's own) fixes every
    bootstrap's random stream; `workers` processes share the benchmarks (default: workers_for the
    campaign's size)."""
    campaign = store.campaign(campaign_id)
    config = read(campaign)
    options = config.options
    if not isinstance(options, TimingOptions):
        raise StoreError(f"campaign {campaign_id} is a {config.kind} campaign, not timed in iterations")
    seed = options.seed if seed is None else seed
    builds = [BuiltMechanism(**b) for b in store.builds(campaign_id)]
    executions = store.executions(campaign_id)
    benchmarks = options.benchmarks
    available = [m.mechanism for m in builds if m.available]
    baseline = config.baseline
    if baseline not in available:
        baseline = None
    looks = interval_looks(options, baseline)
    claimed, confidence = confidence, each_look(confidence, looks)
    planned = store.planned(campaign_id)
    # The cells are what the campaign planned: a benchmark may leave some mechanisms out (its `mechanisms`).
    measured = {(t.benchmark, t.mechanism) for t in planned}
    keys = [(b, m) for b in benchmarks for m in available if (b, m) in measured]
    inputs = _cell_inputs(executions, keys, exclude_disturbed, campaign.machine, options)
    per_bench = [[inputs[(b, m)] for m in available if (b, m) in inputs] for b in benchmarks]
    per_bench = [group for group in per_bench if group]
    if workers is None:
        workers = workers_for(store.iteration_count(campaign_id))
    if workers > 1 and len(per_bench) > 1:
        with ProcessPoolExecutor(min(workers, len(per_bench)), mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_worker, store.location, campaign_id, group, baseline, confidence, seed)
                       for group in per_bench]
            done = [f.result() for f in futures]
    else:
        done = [_analyse_benchmark(store, campaign_id, group, baseline, confidence, seed) for group in per_bench]
    cells, adaptive = with_decisions(store, campaign_id, options.adaptive, [c for group in done for c in group])

    geomeans = {}
    # Over the benchmarks every mechanism ran, so that each mechanism's mean is over the same work.
    common = {b for b in benchmarks if all((b, m) in measured for m in available)}
    for m in available:
        ratios = [c.ratio.value for c in cells if c.mechanism == m and c.ratio and c.benchmark in common]
        if ratios and len(ratios) == len(common):
            geomeans[m] = math.exp(sum(math.log(r) for r in ratios) / len(ratios))

    facts = CampaignFacts.of(campaign, len(planned), len(executions), store)
    ran = {e.machine or campaign.machine for e in executions}
    described = store.machines()
    machines = {m: described.get(m) or (campaign.environment if m == campaign.machine else {}) for m in sorted(ran)}
    workloads = tuple(
        Workload(b, config.param(b),
                 tuple(m for m in available if (b, m) in measured), b in common) for b in benchmarks)
    result = Analysis(facts, claimed, seed, baseline, tuple(builds), benchmarks,
                      tuple(CheckAnswer(**r) for r in store.check_answers(campaign_id)),
                      _audit_summary(executions, exclude_disturbed), adaptive, tuple(cells), geomeans,
                      machines if len(machines) > 1 else {}, workloads,
                      headline=config.study["study"].get("headline") if baseline else None,
                      equivalence=config.study["study"].get("equivalence", DEFAULT_EQUIVALENCE), looks=looks)
    result = replace(result, more_time=tuple(more_time.project(result)))  # in the JSON too, for a CI job to read
    timed = time_beside_counts.partner(store, campaign_id)  # counted campaigns only; a timed one never has one
    if timed is None:
        return result
    return replace(result, beside_time=time_beside_counts.pair(result, current_analysis(store, timed.id)))


def estimates(store: Store, campaign_id: int, keys: list[tuple[str, str]], *, confidence: float = 0.99,
              seed: int = 0
              ) -> dict[tuple[str, str], tuple[int, str | None, Estimate | None, str | None]]:
    """Per benchmark × mechanism in keys: the executions stored, the class, the steady performance with its
    CI (by the same rules as analyse()), and the class the cell had without its latest execution (None with
    fewer than two), so an adaptive budget can see whether the last round changed it."""
    executions = store.executions(campaign_id)
    stored: Counter[tuple[str, str]] = Counter((e.benchmark, e.mechanism) for e in executions)
    options = read(store.campaign(campaign_id)).options
    timing = options if isinstance(options, TimingOptions) else None
    metric = timing.metric if timing else SECONDS_METRIC
    inputs = _cell_inputs(executions, keys, exclude_disturbed=False, options=timing)
    out = {}
    for key in keys:
        good = inputs[key].good
        if not good:
            out[key] = (stored[key], None, None, None)
            continue
        arrays, _ = _read(store, good, metric)
        classes = _classify(store, good, arrays, inputs[key].deltas(), metric)
        summary = summarise(arrays, classes=classes, confidence=confidence, rng=_stream(seed, "cell", *key),
                            bootstrap=False)  # the budget judges by the interval over executions only
        before = None
        if len(arrays) > 1:
            before = (NOT_CLASSIFIED if classes[0] is None
                      else classify_benchmark([c.kind for c in classes[:-1] if c is not None]))
        out[key] = (stored[key], summary.classification, summary.steady_performance, before)
    return out


def first_warmup(store: Store, campaign_id: int, benchmark: str, first: int) -> int | None:
    """How many iterations a benchmark's first executions (rounds below `first`) took to warm up: the most
    any of its cells needed (summary.warmup_length, over its classified executions), so that an execution of
    any of its mechanisms that skips that many starts in the steady state (TimingOptions.later_steady). None
    when none of them is classified, or a classified cell never reached a steady state by warming up (its
    executions all slowed down or never settled): nothing then says where a short one would be steady."""
    executions = [e for e in store.executions(campaign_id) if e.benchmark == benchmark and e.pexec < first]
    options = read(store.campaign(campaign_id)).options
    timing = options if isinstance(options, TimingOptions) else None
    metric = timing.metric if timing else SECONDS_METRIC
    keys = sorted({(e.benchmark, e.mechanism) for e in executions})
    lengths: list[int] = []
    for c in _cell_inputs(executions, keys, exclude_disturbed=False, options=timing).values():
        if not c.good:
            continue
        arrays, _ = _read(store, c.good, metric)
        classes = _classify(store, c.good, arrays, c.deltas(), metric)
        length = warmup_length(classes)
        if length is None:  # none of the cell's is classified: it says nothing of the warm-up
            continue
        if not any(cls is not None and cls.kind in (FLAT, WARMUP) for cls in classes):
            return None
        lengths.append(length)
    return max(lengths, default=None)


def first_iteration_seconds(store: Store, campaign_id: int, benchmark: str, first: int) -> dict[str, float]:
    """Per mechanism, how long an iteration of a benchmark's first executions (rounds below `first`) took:
    the median over their successful iterations, a whole iteration (a batch of calls, not one), so that the
    later executions of cells with short and long iterations can be sized to take similar time."""
    by_mechanism: dict[str, list[int]] = defaultdict(list)
    for e in store.executions(campaign_id):
        if e.benchmark == benchmark and e.pexec < first and e.status == OK:
            by_mechanism[e.mechanism].append(e.id)
    out = {}
    for mechanism, ids in by_mechanism.items():
        data = store.series(ids, (SECONDS,))
        times = [v for (_, name), v in data.items() if name == SECONDS and len(v)]
        if times:
            out[mechanism] = float(np.median(np.concatenate(times)))
    return out


def current_analysis(store: Store, campaign_id: int, exclude_disturbed: bool = False) -> Analysis:
    """The stored analysis of a campaign; recomputed (and stored) only if executions were added since, it
    was computed with the other choice about disturbed executions, or by another version of the result."""
    return cached(
        store, campaign_id, Analysis.from_json,
        lambda stale: analyse(store, campaign_id, exclude_disturbed=exclude_disturbed,
                              seed=stale.seed if stale else None),
        lambda result: (result.campaign.executions_stored == len(store.executions(campaign_id))
                        and result.audit.excluded == exclude_disturbed
                        and _beside_key(result) == time_beside_counts.key(store, campaign_id)
                and len(result.campaign.speed) == len(store.speed_readings(campaign_id))))


def _beside_key(result: Analysis) -> tuple[int, int] | None:
    b = result.beside_time
    return (b.campaign, b.executions) if b else None
