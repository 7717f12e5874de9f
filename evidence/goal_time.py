"""What the default's question would take on one boot's spreads: from several JSON reports of one budget (campaigns
run on the same machine, on the same boot), how many seconds of executions would decide k of the headline's ratios
and leave every other ratio to the baseline within ±decided_within, for k = 0 … all, if each ratio's estimate and
spread between blocks were what the reports show pooled. A reading of reports, nothing is run: it asks whether a time
cap (a budget's max_time_s) can reach a goal on that machine under any order of blocks, not how a campaign orders them.

    .venv/bin/python evidence/goal_time.py runs/*/lua-vms-1.json [--goal 12]

Pooled per ratio: the estimate is the geometric mean of the reports' estimates weighted by their blocks, the spread
between blocks the root of their variances weighted by their degrees of freedom (a report's spread from few blocks
counts little). The blocks a ratio needs are question.blocks_to_decide's at the reports' confidence (the headline's,
and for one decided faster or slower its interval within ±decided_within too) and blocks_to_reach(±decided_within)
for the others, rounded up to the budget's next look point, since a ratio is judged only there; none within the
budget's cap means out of reach. A block holds the baseline and the benchmark's cells whose ratios are still open
(each until its own count), each at its later executions' median cost (iterations times the steady time an
iteration: the leads included, start-up and the harness's own time not, so a lower bound of the wall). The first
blocks' cost is the reports' mean. The headline's ratios a goal leaves out are not run past the first blocks: the
order that decides k with the least time, which no campaign knows in advance. So the figures are the least time at
these spreads, an estimate and not a bound: the pooled spread is itself uncertain, and a ratio whose estimate sits
near the margin's edge moves a lot with it.

`--baselines 2 --stores STORE…` models a block with a second baseline process, each with a layout of its own: a
benchmark's ratios share what moves the baseline from block to block (its process, its layout's mode, its rounds), read
from the stores' blocks as the mean covariance of the blocks' mean log ratios between each two of the benchmark's
mechanisms (shared_variance); with N baselines each ratio's variance between blocks loses (1 - 1/N) of that, and each
block pays the baseline's cost N times. A model of a design not built, to price it before building it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bridgebench import question
from bridgebench.stats.lockstep import block_log_ratio
from bridgebench.timing.stored_ratios import missing, stored_ratios

Key = tuple[str, str]  # (benchmark, mechanism)


def _cost(execution: dict) -> float | None:
    """An execution's seconds, as its iterations at its steady time an iteration (None when it has none)."""
    mean = execution.get("steady_mean")
    return execution["iterations"] * mean if mean else None


@dataclass
class Pool:
    """The ratios and costs of several reports of one budget, pooled."""

    baseline: str
    headline: str
    margin: float
    within: float
    points: list[int]
    first_blocks: int
    confidence: float = 0.99
    baselines: int = 1  # baseline processes a block (more than one: the model above)
    shared: dict[str, float] = field(default_factory=dict)  # benchmark: the variance its ratios share a block
    logs: dict[Key, list[tuple[float, int, float]]] = field(default_factory=lambda: defaultdict(list))
    costs: dict[Key, list[float]] = field(default_factory=lambda: defaultdict(list))
    first_s: list[float] = field(default_factory=list)

    @classmethod
    def read(cls, reports: list[dict]) -> Pool:
        first = reports[0]
        adaptive = first["adaptive"]
        pool = cls(first["baseline"], first["headline"], first["equivalence"], adaptive["decided_within"],
                   list(adaptive["look_points"]), adaptive["first_process_executions"])
        for report in reports:
            pool.first_s.append(0.0)
            for cell in report["cells"]:
                key = (cell["benchmark"], cell["mechanism"])
                for e in cell["per_execution"]:
                    if (seconds := _cost(e)) is not None:
                        if e["pexec"] < pool.first_blocks:
                            pool.first_s[-1] += seconds
                        else:
                            pool.costs[key].append(seconds)
                ratio, sd = cell.get("ratio"), cell.get("ratio_between_sd")
                if cell["mechanism"] != pool.baseline and ratio and sd is not None and ratio["executions"] >= 3:
                    pool.logs[key].append((math.log(ratio["value"]), ratio["executions"], sd))
                    pool.confidence = ratio["confidence"]
        return pool

    def ratio(self, key: Key) -> tuple[float, float]:
        """A ratio's pooled estimate (weighted by blocks) and spread between blocks (by degrees of freedom)."""
        rows = self.logs[key]
        estimate = math.exp(sum(v * n for v, n, _ in rows) / sum(n for _, n, _ in rows))
        sd = math.sqrt(sum((n - 1) * s * s for _, n, s in rows) / sum(n - 1 for _, n, _ in rows))
        spared = self.shared.get(key[0], 0.0) * (1 - 1 / self.baselines)
        return estimate, math.sqrt(max(sd * sd - spared, 0.0))

    def blocks(self, key: Key) -> int | None:
        """The look point at which the pooled ratio would be settled; None: none up to the last."""
        estimate, sd = self.ratio(key)
        reach = math.log1p(self.within)
        if key[1] == self.headline:
            target, n = question.blocks_to_decide(estimate, sd, self.confidence, self.margin)
            if n is not None and target != question.EQUIVALENT:
                wide = question.blocks_to_reach(reach, sd, self.confidence)
                n = None if wide is None else max(n, wide)
        else:
            n = question.blocks_to_reach(reach, sd, self.confidence)
        if n is None:
            return None
        return next((p for p in self.points if p >= max(n, self.first_blocks)), None)

    def seconds(self, benchmark: str, mechanisms: list[str]) -> float:
        """Seconds of the benchmark's later blocks until each of these mechanisms' ratios is settled, each
        member at its later executions' median cost, the baseline in every block."""
        counts = {m: self.blocks((benchmark, m)) for m in mechanisms}
        if not counts:
            return 0.0
        if any(n is None for n in counts.values()):
            return math.inf
        each = {m: statistics.median(self.costs[(benchmark, m)] or [0.0]) for m in [*mechanisms, self.baseline]}
        later = {m: (n or 0) - self.first_blocks for m, n in counts.items()}
        return sum(k * each[m] for m, k in later.items()) + self.baselines * max(later.values()) * each[self.baseline]

    def others(self, benchmark: str) -> list[str]:
        return [m for (b, m) in self.logs if b == benchmark and m != self.headline]

    @property
    def benchmarks(self) -> list[str]:
        return sorted({b for b, _ in self.logs})

    @property
    def first_mean(self) -> float:
        return statistics.mean(self.first_s)

    def split(self, benchmark: str) -> tuple[float, float | None]:
        """A benchmark's later seconds with every other ratio settled, and how many more its headline ratio's
        deciding takes (None: it has no headline ratio)."""
        alone = self.seconds(benchmark, self.others(benchmark))
        if (benchmark, self.headline) not in self.logs:
            return alone, None
        return alone, self.seconds(benchmark, [*self.others(benchmark), self.headline]) - alone

    def goal_times(self) -> tuple[float, list[tuple[str, float]]]:
        """The seconds of executions with none of the headline's ratios decided and every other one settled, and
        then, the cheapest first, each benchmark whose headline ratio is decided next with the seconds in all."""
        splits = {b: self.split(b) for b in self.benchmarks}
        base = self.first_mean + sum(alone for alone, _ in splits.values())
        running, out = base, []
        for b, more in sorted(((b, more) for b, (_, more) in splits.items() if more is not None), key=lambda x: x[1]):
            running += more
            out.append((b, running))
        return base, out


def shared_covariance(logs: dict[str, dict[str, float]]) -> tuple[float, int] | None:
    """One campaign's benchmark: the mean covariance between each two mechanisms' ratios of their blocks' mean log
    ratios (mechanism: block: value), over the blocks all of them ran, with its degrees of freedom; None with fewer
    than two ratios or three such blocks."""
    if len(logs) < 2:
        return None
    common = sorted(set.intersection(*(set(v) for v in logs.values())))
    if len(common) < 3:
        return None
    cov = np.cov(np.array([[v[k] for k in common] for v in logs.values()]))
    return float(cov[np.triu_indices(len(logs), 1)].mean()), len(common) - 1


def shared_variance(stores: list[Path]) -> dict[str, float]:
    """Per benchmark, the variance its ratios to the baseline share from block to block (shared_covariance), pooled
    over the stores' finished campaigns by degrees of freedom, not below zero."""
    logs: dict[tuple[str, str], dict[str, dict[str, float]]] = defaultdict(dict)
    for path in stores:
        for x in stored_ratios(path):
            mine = logs[(x.where, x.cell.benchmark)].setdefault(x.cell.mechanism, {})
            for block, (a, b) in x.blocks().items():
                if len(a) and len(b):
                    mine[block] = block_log_ratio(a, b)
    pooled: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for (_, benchmark), mechanisms in logs.items():
        if (found := shared_covariance(mechanisms)) is not None:
            pooled[benchmark].append(found)
    return {b: max(0.0, sum(c * df for c, df in xs) / sum(df for _, df in xs)) for b, xs in pooled.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+")
    parser.add_argument("--goal", type=int, default=12, help="headline ratios decided, for the summary line")
    parser.add_argument("--baselines", type=int, default=1, help="baseline processes a block (more: a model)")
    parser.add_argument("--stores", type=Path, nargs="+", default=[], help="the reports' stores, for --baselines")
    args = parser.parse_args(argv)
    if gone := next((p for p in args.reports if not p.exists()), None):
        print(f"{gone}: no such report", file=sys.stderr)
        return 2
    if error := missing(args.stores):
        print(error, file=sys.stderr)
        return 2
    if args.baselines < 1 or (args.baselines > 1 and not args.stores):
        print("--baselines: one or more, and above one only with --stores (what the ratios share is read from "
              "their blocks)", file=sys.stderr)
        return 2
    pool = Pool.read([json.loads(p.read_text()) for p in args.reports])
    print(f"{len(args.reports)} reports; pooled, each interval at {pool.confidence:.2%}, looks at {pool.points}\n")
    if args.stores:
        pool.shared, pool.baselines = shared_variance(args.stores), args.baselines
        print("what a benchmark's ratios share from block to block (sd): " + ", ".join(
            f"{b} {math.sqrt(v):.2%}" for b, v in sorted(pool.shared.items())))
        print(f"modelled: {pool.baselines} baseline process(es) a block, each with a layout of its own\n")
    print("| benchmark | headline ratio (pooled) | sd between blocks | blocks | the others' farthest: blocks (sd) | "
          "seconds, the others alone | seconds more for the headline |\n|---|---|---|---|---|---|---|")
    for b in pool.benchmarks:
        others, head = pool.others(b), (b, pool.headline)
        alone, more = pool.split(b)
        estimate, sd = pool.ratio(head) if more is not None else (math.nan, math.nan)
        blocks = (pool.blocks(head) or "out of reach") if more is not None else "—"
        far = max(others, key=lambda m: pool.ratio((b, m))[1], default=None)  # none: a budget of the headline alone
        farthest = (f"{far}: {pool.blocks((b, far)) or 'out of reach'} ({pool.ratio((b, far))[1]:.2%})"
                    if far else "—")
        print(f"| {b} | ×{estimate:.3f} | {sd:.2%} | {blocks} | {farthest} | {alone:.0f} | {more or 0.0:.0f} |")
    base, steps = pool.goal_times()
    print(f"\nfirst blocks {pool.first_mean:.0f} s (the reports' mean); every other ratio within "
          f"±{pool.within:.0%}: {base - pool.first_mean:.0f} s more")
    for k, (b, running) in enumerate(steps, start=1):
        mark = "  <- the goal" if k == args.goal else ""
        print(f"{k:2} of {len(steps)} headline ratios decided: {running:.0f} s of executions (+{b}){mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
