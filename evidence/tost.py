"""What equivalence by two one-sided tests (TOST) would decide that the report's rule does not: the report calls a
ratio *equivalent* when its interval at the report's confidence c lies within the study's margin; TOST at the same
level, 1 - c, asks that of the interval at 2c - 1 (98 % for 99 %), about a tenth narrower. For each finished
campaign of each store, and each ratio to the baseline resting on Student's t (lock-step blocks, or rounds paired),
it counts the ratios each rule decides and names those only TOST calls equivalent. A benchmark of the method on
stored runs, not a test; nothing is run.

    .venv/bin/python evidence/tost.py STORE [STORE ...] [--mechanism luajit2]

The narrower interval is the same t interval at another quantile: its half-width on the log scale times
t(c, df) / t((1 + c) / 2, df), df = the blocks (or rounds) less one.
"""

from __future__ import annotations

import argparse
import math

from bridgebench import question
from bridgebench.stats import Estimate
from bridgebench.stats.executions import t_quantile
from bridgebench.stats.lockstep import LOCKSTEP_METHOD
from bridgebench.stats.paired import PAIRED_METHOD
from bridgebench.store import Store
from bridgebench.timing.analysis import current_analysis

STUDENT = (LOCKSTEP_METHOD, PAIRED_METHOD)  # intervals exp(mean ± t·sd/√k) over k blocks or rounds


def tost_interval(ratio: Estimate) -> tuple[float, float] | None:
    """The interval at 2c - 1 of a Student-t ratio at confidence c; None for another method or no interval."""
    if ratio.method not in STUDENT or ratio.low is None or ratio.high is None or not ratio.executions \
            or ratio.executions < 2:
        return None
    df = ratio.executions - 1
    shrink = t_quantile(ratio.confidence, df) / t_quantile((1 + ratio.confidence) / 2, df)
    centre = math.log(ratio.value)
    return (math.exp(centre - shrink * (centre - math.log(ratio.low))),
            math.exp(centre + shrink * (math.log(ratio.high) - centre)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+")
    ap.add_argument("--mechanism", help="only this mechanism's ratios (default: every mechanism's)")
    args = ap.parse_args()
    print("| store | campaign | ratios | decided by the report's rule | equivalent | more equivalent by TOST |")
    print("|---|---|---|---|---|---|")
    for path in args.stores:
        store = Store(path, create=False)
        for campaign in (c for c in store.campaigns() if c.state == "done"):
            result = current_analysis(store, campaign.id)
            ratios = decided = equivalent = 0
            more = []
            for cell in result.cells:
                if cell.mechanism == result.baseline or cell.ratio is None or (
                        args.mechanism and cell.mechanism != args.mechanism):
                    continue
                ratios += 1
                state = question.answer(cell.ratio, result.equivalence).state
                decided += state in question.DECIDED
                equivalent += state == question.EQUIVALENT
                narrower = tost_interval(cell.ratio)
                if state == question.UNDECIDED and narrower and \
                        1 - result.equivalence <= narrower[0] and narrower[1] <= 1 + result.equivalence:
                    more.append(f"{cell.benchmark} {cell.mechanism} ({narrower[0]:.3f}–{narrower[1]:.3f}, "
                                f"{cell.ratio.executions} blocks)")
            print(f"| {path} | {campaign.id} | {ratios} | {decided} | {equivalent} | {len(more)}"
                  + (f": {'; '.join(more)}" if more else "") + " |")
        store.close()


if __name__ == "__main__":
    main()
