"""How often the 99% ratio intervals are wrong on real runs: A/A pairs (the same program under two names, so
the true ratio is 1) and planted pairs (a known ratio), over every finished campaign of a store. A benchmark
of the harness's statistics on this machine (issue #22), not a test.

    .venv/bin/bridgebench selftest -n 50 --store OUT/quiet.sqlite      # runs A, A again, A + 5 %, …
    .venv/bin/python benchmarks/coverage.py OUT/quiet.sqlite --pair a:a-again --pair a:a-plus5=1.05

For each campaign and benchmark, the ratio of the pair's cells is computed by the analysis's own rule
(analysis.ratio_between on the cached analysis: paired by round from 5 shared rounds, else Welch's t over
the executions, no interval below 3 a side). The table counts the comparisons, those with an interval,
those whose interval misses the true ratio, and the disturbed ones (an execution of the pair flagged by the
audit). With a 99% interval about 1 comparison in 100 should miss; the binomial interval on the count says
whether the misses are more than chance. Nothing is run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scipy.stats import binomtest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bridgebench.analysis import Series, current_analysis, ratio_between  # noqa: E402
from bridgebench.store import Store  # noqa: E402


def pair_spec(text: str) -> tuple[str, str, float]:
    names, _, truth = text.partition("=")
    a, _, b = names.partition(":")
    if not a or not b:
        raise argparse.ArgumentTypeError(f"{text!r}: expected A:B or A:B=RATIO")
    return a, b, float(truth) if truth else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--pair", type=pair_spec, action="append", required=True,
                        help="A:B (an A/A pair, true ratio 1) or A:B=RATIO (a planted ratio)")
    parser.add_argument("--study", help="only this study's campaigns")
    args = parser.parse_args()
    store = Store(args.store, create=False)
    series = Series(store)
    campaigns = [c for c in store.campaigns(args.study) if c.state == "done"]
    print(f"{len(campaigns)} finished campaigns in {args.store}")
    print("| pair | true ratio | comparisons | with an interval | missed | missed (quiet) | disturbed | "
          "miss rate, 99% binomial CI |")
    print("|---|---|---|---|---|---|---|---|")
    for a, b, truth in args.pair:
        counts = {"all": 0, "interval": 0, "missed": 0, "quiet": 0, "quiet_missed": 0, "disturbed": 0}
        for campaign in campaigns:
            result = current_analysis(store, campaign.id)
            for bench in result.benchmarks:
                cell_a, cell_b = result.cell(bench, a), result.cell(bench, b)
                if cell_a is None or cell_b is None:
                    continue
                sa, sb = series.steady(cell_a.per_execution), series.steady(cell_b.per_execution)
                if not sa or not sb:
                    continue
                ratio = ratio_between(sa, sb, confidence=result.confidence, same_campaign=True)
                counts["all"] += 1
                if not ratio.has_interval:
                    continue
                noisy = cell_a.disturbed + cell_b.disturbed > 0
                missed = not ratio.holds(truth)
                counts["interval"] += 1
                counts["missed"] += missed
                counts["disturbed"] += noisy
                counts["quiet"] += not noisy
                counts["quiet_missed"] += missed and not noisy
        n, k = counts["interval"], counts["missed"]
        ci = binomtest(k, n).proportion_ci(0.99) if n else None
        rate = f"{k / n:.1%} ({ci.low:.1%}–{ci.high:.1%})" if ci else "—"
        print(f"| {a} : {b} | {truth:g} | {counts['all']} | {n} | {k} | {counts['quiet_missed']} of "
              f"{counts['quiet']} | {counts['disturbed']} | {rate} |")


if __name__ == "__main__":
    main()
