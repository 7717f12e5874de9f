"""How often the 99% ratio intervals are wrong on real runs: A/A pairs (the same program under two names, so
the true ratio is 1) and planted pairs (a known ratio), over every finished campaign of a store. A benchmark
of the harness's statistics on this machine (issue #22), not a test.

    .venv/bin/bridgebench selftest -n 50 --store OUT/quiet.sqlite      # runs A, A again, A + 5 %, …
    .venv/bin/python evidence/coverage.py OUT/quiet.sqlite --pair a:a-again --pair a:a-plus5=1.05
    .venv/bin/python evidence/aa.py OUT/aa.sqlite                     # lua-vms: LuaJIT, LuaJIT again
    .venv/bin/python evidence/coverage.py OUT/aa.sqlite --pair luajit:luajit-again --across luajit

For each campaign and benchmark, the ratio of the pair's cells is computed by the analysis's own rule
(analysis.ratio_between on the cached analysis: paired by round from 5 shared rounds, else Welch's t over
the executions, no interval below 3 a side, at the confidence the report computes it at). `--truths STORE`
takes a planted pair's truth benchmark by benchmark from the same pair counted in STORE's last finished counted
campaign (lua-vms: `run lua-vms --budget plus2-counted --store STORE`), where what was planted is not the share
asked for; benchmarks it lacks keep the ratio given with --pair, and those whose counted ratio is itself not
known within ±2 % (its own interval reaches farther) are left out and named: a timed interval cannot be held to a
truth that uncertain. A miss whose interval overlaps the counted truth's own says so. Counts are not times: on
LuaJIT's planted pair the two agreed on fasta and nbody only (methodology §13, "Twins on the next boot"). `--across M`
compares mechanism M with itself in another campaign (Welch's t, as `diff` does), the campaigns taken two by
two in the order they ran. `--split` resamples stored campaigns: each cell with at least 6 executions,
split once at random into two halves, one half against the other. The table counts the comparisons, those
with an interval, those whose interval misses the true ratio, and the disturbed ones (an execution of the
pair flagged by the audit), and how wide the intervals were; below it, how the comparisons were answered
(question.answer: faster, slower, equivalent within the study's margin, undecided; for A/A, *equivalent* is
the power and *faster* or *slower* the error), for pairs within a campaign what `diff` said of the same
cells, each verdict with the rules that gave it (diff_rules.RULES: its rules add *different*, from the shares
of classes or of executions that reach a steady state), then each interval that missed. With a 99% interval
about 1 comparison in 100 should miss; the binomial interval on the count says whether the misses are more
than chance. `--versus STORE` pairs each --pair's comparisons with STORE's of the same campaign seed and benchmark
(evidence/aa.py --turns a,b runs each seed every way, into a store each) and says how many each way found where the
other did not, with the exact McNemar test of those: whether one way's power is really above the other's. Nothing
is run.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from bridgebench import question
from bridgebench.instructions import INSTRUCTIONS
from bridgebench.stats import Estimate
from bridgebench.stats.executions import MIN_EXECUTIONS
from bridgebench.store import Campaign, Store
from bridgebench.timing.analysis import Series, current_analysis, ratio_between
from bridgebench.timing.diff_rules import DIFFERENT, RULES, VERDICTS
from bridgebench.timing.diff_sides import compare
from bridgebench.timing.result import Cell

REPO = Path(__file__).resolve().parents[1]


def counted_truths(path: str, a: str, b: str) -> dict[str, Estimate]:
    """B over A, benchmark by benchmark, in the last finished campaign of the store at `path` that counted
    instructions for both: the truth a planted pair's timed ratios are held to."""
    store = Store(path, create=False)
    series = Series(store, INSTRUCTIONS)
    for campaign in reversed([c for c in store.campaigns() if c.state == "done"]):
        result = current_analysis(store, campaign.id)
        if result.metric != INSTRUCTIONS or not {a, b} <= {c.mechanism for c in result.cells}:
            continue
        truths = {bench: _ratio(series, result.cell(bench, a), result.cell(bench, b), result.interval_confidence,
                                same_campaign=True) for bench in result.benchmarks}
        return {bench: t for bench, t in truths.items() if t is not None}
    raise SystemExit(f"--truths {path}: no finished campaign there counted instructions for both {a} and {b}")


SETTLED_TRUTH = 0.02  # a counted truth holds timed intervals where its own interval reaches at most this far


def settled(truths: dict[str, Estimate]) -> tuple[dict[str, Estimate], dict[str, Estimate]]:
    """The counted truths known well enough to hold timed intervals to, and the others."""
    known = {b: t for b, t in truths.items() if t.reach is not None and t.reach <= SETTLED_TRUTH * t.value}
    return known, {b: t for b, t in truths.items() if b not in known}


def _shown(t: Estimate) -> str:
    return f"×{t.value:.4f}" + (f" ({t.low:.4f}–{t.high:.4f})" if t.reach is not None else "")


def pair_spec(text: str) -> tuple[str, str, float]:
    names, _, truth = text.partition("=")
    a, _, b = names.partition(":")
    if not a or not b:
        raise argparse.ArgumentTypeError(f"{text!r}: expected A:B or A:B=RATIO")
    return a, b, float(truth) if truth else 1.0


class Count:
    """A/A or planted comparisons and how their intervals fared."""

    def __init__(self) -> None:
        self.all = self.interval = self.missed = self.quiet = self.quiet_missed = self.disturbed = 0
        self.widths: list[float] = []  # each interval's half-width (its reach), relative to its ratio
        self.misses: list[str] = []  # where an interval missed the truth, and what it said
        self.answers: Counter[str] = Counter()  # what question.answer said of each comparison
        self.by_benchmark: dict[str, Counter[str]] = {}  # the same, benchmark by benchmark
        self.differ: Counter[tuple[str, str]] = Counter()  # what `diff` said of the pair, by verdict and rule
        # (within a campaign only)
        self.left_out: list[str] = []  # comparisons not counted: their counted truth is not known well enough
        self.states: dict[tuple[int, str], str] = {}  # each answer by (campaign seed, benchmark), for --versus

    def add(self, ratio: Estimate, truth: float, noisy: bool, benchmark: str, where: str, equivalence: float,
            counted: Estimate | None = None, seed: int | None = None) -> None:
        """One comparison of `benchmark`; `where` says which (mechanisms, campaigns) for a miss's line; `counted`:
        the truth's own interval, when it was counted; `seed`: its campaign's, to pair it with another store's."""
        self.all += 1
        state = question.answer(ratio, equivalence).state
        if seed is not None:
            self.states[seed, benchmark] = state
        self.answers[state] += 1
        self.by_benchmark.setdefault(benchmark, Counter())[state] += 1
        reach = ratio.reach
        if reach is None:
            return
        missed = not ratio.holds(truth)
        self.interval += 1
        self.widths.append(reach / ratio.value)  # its farther end, as the report's ± and the budget read it
        if missed:
            overlaps = (counted is not None and counted.reach is not None and ratio.low is not None
                        and ratio.high is not None and ratio.low <= counted.high and counted.low <= ratio.high)
            self.misses.append(f"{benchmark}, {where}: ×{ratio.value:.3f} ({ratio.low:.3f}–{ratio.high:.3f})"
                               + (f", overlapping the counted truth's {counted.low:.4f}–{counted.high:.4f}"
                                  if overlaps and counted else ""))
        self.missed += missed
        self.disturbed += noisy
        self.quiet += not noisy
        self.quiet_missed += missed and not noisy

    def merge(self, other: Count) -> None:
        for key, value in vars(other).items():
            if key == "by_benchmark":
                for bench, answers in value.items():
                    self.by_benchmark.setdefault(bench, Counter()).update(answers)
            elif key == "states":
                self.states.update(value)
            else:
                setattr(self, key, getattr(self, key) + value)

    def row(self, what: str, truth: float) -> str:
        n, k = self.interval, self.missed
        ci = binomtest(k, n).proportion_ci(0.99) if n else None
        rate = f"{k / n:.1%} ({ci.low:.1%}–{ci.high:.1%})" if ci else "—"
        widths = ("±{:.1%}, ±{:.1%}, ±{:.1%}".format(*np.percentile(self.widths, [50, 90, 100]))
                  if self.widths else "—")
        return (f"| {what} | {truth:g} | {self.all} | {n} | {k} | {self.quiet_missed} of {self.quiet} | "
                f"{self.disturbed} | {rate} | {widths} |")


def _ratio(series: Series, cell_a: Cell | None, cell_b: Cell | None, confidence: float, same_campaign: bool
           ) -> Estimate | None:
    """B over A by the analysis's ratio rule, from both cells' steady executions; None when a side has none."""
    if cell_a is None or cell_b is None:
        return None
    sa, sb = series.steady(cell_a.per_execution), series.steady(cell_b.per_execution)
    return ratio_between(sa, sb, confidence=confidence, same_campaign=same_campaign) if sa and sb else None


def _add_pair(count: Count, series: Series, cell_a: Cell | None, cell_b: Cell | None, truth: float,
              confidence: float, same_campaign: bool, benchmark: str, where: str, equivalence: float,
              counted: Estimate | None = None, seed: int | None = None) -> None:
    """One comparison of two cells' steady executions by the analysis's ratio rule, when both have some."""
    ratio = _ratio(series, cell_a, cell_b, confidence, same_campaign)
    if ratio is not None and cell_a is not None and cell_b is not None:
        count.add(ratio, truth, cell_a.disturbed + cell_b.disturbed > 0, benchmark, where, equivalence, counted,
                  seed)


def within(store: Store, campaigns: list[Campaign], a: str, b: str, truth: float,
           truths: dict[str, Estimate] | None = None) -> Count:
    """A against B inside each campaign, at the confidence its report computes intervals at; the truth is
    `truths`' estimate where it has the benchmark and knows it well enough (settled()), else `truth`; a benchmark
    whose counted truth is too uncertain is left out."""
    count = Count()
    known, unsettled = settled(truths or {})
    for campaign in campaigns:
        result = current_analysis(store, campaign.id)
        series = Series(store, result.metric)  # a counted campaign's iterations are its counts
        for bench in result.benchmarks:
            if bench in unsettled:
                if result.cell(bench, a) and result.cell(bench, b):
                    count.left_out.append(bench)
                continue
            _add_pair(count, series, result.cell(bench, a), result.cell(bench, b),
                      known[bench].value if bench in known else truth, result.interval_confidence,
                      same_campaign=True, benchmark=bench, where=f"{b} over {a} in campaign {campaign.id}",
                      equivalence=result.equivalence, counted=known.get(bench),
                      seed=campaign.config.get("options", {}).get("seed"))
        if not {a, b} <= {c.mechanism for c in result.cells}:  # a campaign that ran other mechanisms
            continue
        for c in compare(store, campaign.id, a, campaign.id, b)[0]:
            count.differ[c.verdict, c.rule] += 1
    return count


def versus(first: Count, second: Count, truth: float) -> str:
    """One pair's answers in two stores, paired by campaign seed and benchmark (evidence/aa.py --turns a,b runs each
    seed every way): how often each found the truth's direction (any difference, for A/A) where the other did not,
    and the exact McNemar test of those discordant pairs (a two-sided binomial test of the first's share at 1/2)."""
    hit = ({question.SLOWER} if truth > 1 else {question.FASTER} if truth < 1
           else {question.FASTER, question.SLOWER})
    both = sorted(first.states.keys() & second.states.keys())
    only_first = sum(first.states[k] in hit and second.states[k] not in hit for k in both)
    only_second = sum(second.states[k] in hit and first.states[k] not in hit for k in both)
    n = only_first + only_second
    p = binomtest(only_first, n).pvalue if n else 1.0
    return (f"{len(both)} comparisons paired; {' or '.join(sorted(hit))} in the first only: {only_first}, in the "
            f"second only: {only_second}; exact McNemar test p = {p:.2g}")


def said_by_rule(differ: Counter[tuple[str, str]]) -> str:
    """Each verdict `diff` gave, with the rules that gave it: "different 0, undecided 3 (too few 1, ratio 2)"."""
    said = []
    for verdict in VERDICTS:
        rules = [(rule, n) for rule in RULES if (n := differ[verdict, rule])]
        if rules or verdict == DIFFERENT:  # a count of claims, zero included
            total = sum(n for _, n in rules)
            said.append(f"{verdict} {total}" + (f" ({', '.join(f'{r} {n}' for r, n in rules)})" if rules else ""))
    return ", ".join(said)


def across(store: Store, campaigns: list[Campaign], mechanism: str) -> Count:
    """The mechanism in one campaign against itself in the next, campaigns taken two by two (1 with 2, 3 with
    4, ...) so that no campaign's data counts twice."""
    count = Count()
    for first, second in zip(campaigns[0::2], campaigns[1::2], strict=False):
        ra, rb = current_analysis(store, first.id), current_analysis(store, second.id)
        if ra.metric != rb.metric:  # counts against times: no ratio (diff refuses it too)
            continue
        series = Series(store, ra.metric)
        for bench in ra.benchmarks:
            _add_pair(count, series, ra.cell(bench, mechanism), rb.cell(bench, mechanism), 1.0, ra.confidence,
                      same_campaign=False,
                      benchmark=bench, where=f"{mechanism} in campaign {second.id} over campaign {first.id}",
                      equivalence=ra.equivalence)
    return count


def split(store: Store, campaigns: list[Campaign], seed: int) -> Count:
    """A/A by resampling stored campaigns: every cell with at least 2 × 3 steady executions, its executions
    split once at random into two halves (the odd one out left over), one half against the other (Welch's t):
    the same mechanism, so the truth is 1. One split a cell, so that no execution counts twice."""
    count = Count()
    rng = random.Random(seed)
    for campaign in campaigns:
        result = current_analysis(store, campaign.id)
        series = Series(store, result.metric)
        for cell in result.cells:
            rounds = series.steady(cell.per_execution)
            keys = sorted(rounds)
            if len(keys) < 2 * MIN_EXECUTIONS:
                continue
            rng.shuffle(keys)
            half = len(keys) // 2
            a, b = {k: rounds[k] for k in keys[:half]}, {k: rounds[k] for k in keys[half:2 * half]}
            count.add(ratio_between(a, b, confidence=result.confidence, same_campaign=False), 1.0,
                      cell.disturbed > 0, cell.benchmark, f"{cell.mechanism} in campaign {campaign.id}, halves",
                      result.equivalence)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--pair", type=pair_spec, action="append", default=[],
                        help="A:B (an A/A pair, true ratio 1) or A:B=RATIO (a planted ratio)")
    parser.add_argument("--across", action="append", default=[], metavar="MECHANISM",
                        help="A/A across campaigns: the mechanism in campaign 1 against it in 2, 3 in 4, ...")
    parser.add_argument("--split", action="store_true",
                        help="A/A by resampling: each cell with 6 or more executions split in two halves")
    parser.add_argument("--seed", type=int, default=0, help="for --split")
    parser.add_argument("--truths", metavar="STORE",
                        help="planted pairs' truth per benchmark: the pair counted in STORE (budget plus2-counted)")
    parser.add_argument("--study", help="only this study's campaigns")
    parser.add_argument("--versus", metavar="STORE",
                        help="pair each --pair's comparisons with STORE's of the same campaign seed and benchmark "
                             "(evidence/aa.py --turns a,b) and test whether one finds more (exact McNemar)")
    parser.add_argument("--by-benchmark", action="store_true",
                        help="also how each benchmark's comparisons were answered (power differs by benchmark)")
    args = parser.parse_args()
    if not args.pair and not args.across and not args.split:
        parser.error("give at least one --pair, --across or --split")
    store = Store(args.store, create=False)
    campaigns = [c for c in store.campaigns(args.study) if c.state == "done"]
    print(f"{len(campaigns)} finished campaigns in {args.store}")
    print("| comparison | true ratio | comparisons | with an interval | missed | missed (quiet) | disturbed | "
          "miss rate, 99% binomial CI | half-width: median, 90th percentile, largest |")
    print("|---|---|---|---|---|---|---|---|---|")
    total = Count()
    planted = {(a, b): counted_truths(args.truths, a, b) for a, b, truth in args.pair if args.truths and truth != 1}
    pairs = {(a, b): within(store, campaigns, a, b, truth, planted.get((a, b))) for a, b, truth in args.pair}
    rows = [(f"{a} : {b}, within a campaign" + (", truths counted" if (a, b) in planted else ""), truth,
             pairs[(a, b)]) for a, b, truth in args.pair]
    rows += [(f"{m}, across campaigns", 1.0, across(store, campaigns, m)) for m in args.across]
    if args.split:
        rows.append(("every cell split in two halves", 1.0, split(store, campaigns, args.seed)))
    for what, truth, count in rows:
        print(count.row(what, truth))
        if truth == 1.0:
            total.merge(count)
    if sum(truth == 1.0 for _, truth, _ in rows) > 1:
        print(total.row("every A/A comparison", 1.0))
    for what, _, count in rows:
        answered = ", ".join(f"{state} {count.answers[state]}" for state in
                             (question.FASTER, question.SLOWER, question.EQUIVALENT, question.UNDECIDED))
        print(f"answered ({what}): {answered}")
        if count.differ:
            print(f"diff said ({what}): {said_by_rule(count.differ)}")
        for miss in count.misses:
            print(f"missed ({what}): {miss}")
    if args.versus:
        other = Store(args.versus, create=False)
        theirs = [c for c in other.campaigns(args.study) if c.state == "done"]
        for a, b, truth in args.pair:
            paired = versus(pairs[(a, b)], within(other, theirs, a, b, truth, planted.get((a, b))), truth)
            print(f"versus {args.versus} ({a} : {b}): {paired}")
    for (a, b), truths in planted.items():
        print(f"\ncounted in {args.truths}, {b} over {a}: " + ", ".join(
            f"{bench} {_shown(t)}" for bench, t in truths.items()))
        unsettled = settled(truths)[1]
        if unsettled:
            left = Counter(pairs[(a, b)].left_out)
            print(f"left out, their counted truth not known within ±{SETTLED_TRUTH:.0%}: " + ", ".join(
                f"{bench} {_shown(t)} ({left[bench]} comparisons)" for bench, t in unsettled.items()))
    if args.by_benchmark:
        for what, _, count in rows:
            print(f"\n{what}\n\n| benchmark | comparisons | faster | slower | equivalent | undecided |")
            print("|---|---|---|---|---|---|")
            for bench, answers in count.by_benchmark.items():
                print(f"| {bench} | {sum(answers.values())} | " + " | ".join(
                    str(answers[state]) for state in (question.FASTER, question.SLOWER, question.EQUIVALENT,
                                                      question.UNDECIDED)) + " |")


if __name__ == "__main__":
    main()
