"""Does the machine drift, and how much of a ratio's CI does pairing by round take out? (issue #9; a
benchmark of the analysis on a stored campaign, not a test.)

    .venv/bin/python evidence/pairing.py STORE [--campaign ID]
    .venv/bin/python evidence/pairing.py --simulate [--trials 400]

For a campaign of STORE (default: its newest finished one) it prints:
- how alike the steady means of executions that ran one after another are: each execution's steady mean
  over its cell's mean, in the order they ran, and the correlation of that series with itself a few
  executions later. Executions of different benchmarks and mechanisms share nothing but the machine and
  the time they ran at, so a correlation well above 0 is the machine's speed drifting;
- per ratio to the baseline, the spread of the executions' log ratios when each execution of a round is
  paired with the baseline's of the same round, against unpaired (medians over the ratios);
- the median 99% CI half-width of the ratios from the same stored iterations, paired (stats.paired_ratio
  over the shared rounds, however few) and unpaired (analysis.ratio_between across campaigns: Welch's t over
  the executions, which gives no interval below 3 a side).
Nothing is run; the figures are the campaign's, on the machine it ran on.

`--simulate` prints, for k rounds of two mechanisms (B does 1.05× A's work, each execution's mean off by 2%
of its own, and the machine drifting by 0 or 5% from round to round, common to a round), how often each
ratio interval at 99% holds 1.05 and its median half-width: Welch's t over each side's executions
(unpaired; no interval below 3 rounds) and the paired t interval (stats.paired_ratio). The figures are the
model's, not a machine's.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from bridgebench.stats.executions import ratio_over_executions
from bridgebench.stats.paired import paired_ratio
from bridgebench.store import Store
from bridgebench.timing.analysis import PAIRED_MIN_ROUNDS, Series, current_analysis, ratio_between

REPO = Path(__file__).resolve().parents[1]

LAGS = (1, 2, 5, 10, 20, 40)


def _shown(hits: int, widths: list[float], trials: int) -> str:
    """How often the interval held 1.05, and its median half-width; 'no interval' where there was none."""
    return f"{hits / trials:.0%} | ±{np.median(widths):.1%}" if widths else "no interval | —"


def simulate(trials: int) -> None:
    rng = np.random.default_rng(0)
    print("| rounds | drift | unpaired Welch t: holds 1.05 | half-width | paired t: holds 1.05 | half-width |")
    print("|---|---|---|---|---|---|")
    for drift in (0.0, 0.05):
        for k in (2, 3, 4, 5, 6, 8, 10):
            hits = {"u": 0, "p": 0}
            widths: dict[str, list[float]] = {"u": [], "p": []}
            for _ in range(trials):
                a, b = [], []
                for _ in range(k):
                    machine = 1 + rng.normal(0, drift)
                    a.append(rng.normal(machine * (1 + rng.normal(0, 0.02)), 0.005, 50))
                    b.append(rng.normal(1.05 * machine * (1 + rng.normal(0, 0.02)), 0.005, 50))
                unpaired = ratio_over_executions([x.mean() for x in a], [x.mean() for x in b])
                for key, r in (("u", unpaired), ("p", paired_ratio(a, b))):
                    if r.low is not None and r.high is not None:
                        hits[key] += r.low <= 1.05 <= r.high
                        widths[key].append((r.high - r.low) / 2 / r.value)
            print(f"| {k} | {drift:.0%} | {_shown(hits['u'], widths['u'], trials)} | "
                  f"{_shown(hits['p'], widths['p'], trials)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?")
    parser.add_argument("--campaign", type=int)
    parser.add_argument("--simulate", action="store_true")
    parser.add_argument("--trials", type=int, default=400)
    args = parser.parse_args()
    if args.simulate:
        simulate(args.trials)
        return
    if not args.store:
        parser.error("give a STORE, or --simulate")
    store = Store(args.store, create=False)
    cid = args.campaign or max(c.id for c in store.campaigns() if c.state == "done")
    result = current_analysis(store, cid)
    base = result.baseline
    seq = {e.id: e.seq for e in store.executions(cid)}
    deviations = []
    for cell in result.cells:
        means = [r.steady_mean for r in cell.per_execution if r.steady_mean]
        if len(means) > 1:
            deviations += [(seq[r.execution_id], r.steady_mean / np.mean(means) - 1)
                           for r in cell.per_execution if r.steady_mean]
    z = np.array([d for _, d in sorted(deviations)])
    print(f"campaign {cid} ({result.campaign.study}): {len(z)} executions; their steady means deviate from "
          f"their cell's by {np.std(z):.1%} (sd)")
    print("correlation with the execution k later: " + ", ".join(
        f"k={k} {np.corrcoef(z[:-k], z[k:])[0, 1]:+.2f}" for k in LAGS if len(z) > k + 2))
    series = Series(store)
    spreads: dict[bool, list[float]] = {True: [], False: []}
    widths: dict[bool, list[float]] = {True: [], False: []}
    for cell in result.cells:
        base_cell = result.cell(cell.benchmark, base) if base else None
        if base_cell is None or cell.mechanism == base:
            continue
        sa, sb = series.steady(base_cell.per_execution), series.steady(cell.per_execution)
        shared = sorted(set(sa) & set(sb))
        if len(shared) < 2:
            continue
        la = np.log([sa[r][1].mean() for r in shared])
        lb = np.log([sb[r][1].mean() for r in shared])
        spreads[True].append(float(np.std(lb - la, ddof=1)))
        spreads[False].append(float(np.hypot(np.std(la, ddof=1), np.std(lb, ddof=1))))
        paired = paired_ratio([sa[r][1] for r in shared], [sb[r][1] for r in shared], confidence=result.confidence)
        alone = ratio_between(sa, sb, confidence=result.confidence, same_campaign=False)
        for key, r in ((True, paired), (False, alone)):
            if r.low is not None and r.high is not None:
                widths[key].append((r.high - r.low) / 2 / r.value)
    if not widths[True] or not widths[False]:
        print("no ratio has two shared rounds and three executions a side: nothing to compare")
        return
    print(f"{len(widths[True])} ratios to {base}, median over them:")
    print(f"  sd of the executions' log ratio: paired by round {statistics.median(spreads[True]):.2%}, "
          f"unpaired {statistics.median(spreads[False]):.2%}")
    print(f"  99% CI half-width: paired t over the shared rounds ±{statistics.median(widths[True]):.2%}, "
          f"unpaired Welch t ±{statistics.median(widths[False]):.2%} (the analysis pairs from "
          f"{PAIRED_MIN_ROUNDS} shared rounds on)")


if __name__ == "__main__":
    main()
