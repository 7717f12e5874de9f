"""How often the adaptive budget aimed at the question (campaign/adaptive.py, `until_decided`) calls a ratio
decided wrongly, against planted truth: a benchmark of the method, not a test (tests/test_adaptive.py runs a
small version of it within binomial tolerance).

    .venv/bin/python evidence/sequential.py [--pairs 4000] [--first 3] [--cap 12] [--seed 0]
        [--growth 1.5] [--within 0.05] [--out-of-reach]   (lua-vms's default: --cap 60 with the first two)

Each simulated pair of cells gets `first` process executions a side, then one more a side per round (a
block) until the budget's rule decides its ratio or the cap is reached, exactly as the budget does: each
round a lock-step block, the ratio by analysis.ratio_between (Student's t over blocks), judged by
question.answer at the looks-corrected confidence, at the look points of --growth. An execution's one
number is drawn around the cell's true level with a between-execution spread of `--sd` (log scale) and,
with probability `--mode-rate`, a whole-execution slowdown of `--mode-factor` (LuaJIT's speed modes, as
measured in lua-vms). Printed per planted ratio: how often the report ended faster or slower (wrong for
A/A), equivalent, or undecided; how often the report's final interval (over all the blocks the pair got, at
the stopping confidence, so 99 % over the looks) excludes 1, beside a plain 99 % interval of the same
blocks; and how often the report's interval misses the truth.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from bridgebench import question
from bridgebench.campaign.adaptive import half_width, stopping_confidence
from bridgebench.options import AdaptiveBudget, look_points
from bridgebench.stats import Estimate
from bridgebench.timing.analysis import Rounds, Side, ratio_between

EQUIVALENCE = 0.02
# --out-of-reach: a rule tried on 2026-11-26 and not kept in the budget (docs/methodology.md §9): from this many
# blocks, an undecided ratio stops when question.blocks_to_decide puts its decision past the cap.
REACH_FROM = 8


def execution(rng: np.random.Generator, level: float, sd: float, mode_rate: float, mode_factor: float
              ) -> np.ndarray:
    """One process execution's steady iterations (5 of them, tightly around its own mean)."""
    mean = level * float(np.exp(rng.normal(0.0, sd)))
    if rng.random() < mode_rate:
        mean *= mode_factor
    return mean * (1 + 0.001 * rng.standard_normal(5))


def one_pair(rng: np.random.Generator, truth: float, first: int, cap: int, sd: float, mode_rate: float,
             mode_factor: float, growth: float = 1.0, within: float | None = None, out_of_reach: bool = False
             ) -> tuple[str, bool, bool, bool]:
    """What the budget decided for one planted pair; whether the report's final interval excludes 1 (and
    whether a plain 99 % one would); and whether the report's interval misses the truth. Each round is a
    lock-step block (its two executions' one turn each), judged at the budget's look points; with
    `out_of_reach`, an undecided ratio stops when its decision looks out of the cap's reach (REACH_FROM)."""
    growth_looks = AdaptiveBudget(first, 0.02, cap, 0.0, False, 0, True, growth, within)
    stop_confidence = stopping_confidence(first, cap, growth)
    a: Rounds = {}
    b: Rounds = {}
    for r in range(cap):
        a[r] = _side(r, execution(rng, 1.0, sd, mode_rate, mode_factor))
        b[r] = _side(r, execution(rng, truth, sd, mode_rate, mode_factor))
        if r + 1 < first or not growth_looks.is_look(r + 1):
            continue
        ratio = ratio_between(a, b, confidence=stop_confidence, same_campaign=True)
        answer = question.answer(ratio, EQUIVALENCE)
        if answer.state in question.DECIDED and (within is None or answer.state == question.EQUIVALENT
                                                 or (half_width(ratio) is not None and half_width(ratio) <= within)):
            break
        if out_of_reach and answer.state not in question.DECIDED and r + 1 >= REACH_FROM:
            logs = [np.log(b[k].turns[0] / a[k].turns[0]) for k in a]
            needed = question.blocks_to_decide(ratio.value, float(np.std(logs, ddof=1)), stop_confidence,
                                               EQUIVALENCE)[1]
            if needed is None or needed > cap:
                break
    # What the report prints: the interval at the stopping confidence (analysis.interval_looks), its verdict,
    # and, as the report did before 2026-11-24, the plain 99 % interval of the same executions.
    final = ratio_between(a, b, confidence=stop_confidence, same_campaign=True)
    state = question.answer(final, EQUIVALENCE).state
    missed = final.low is not None and final.high is not None and not final.low <= truth <= final.high
    return state, _excludes_1(final), _excludes_1(ratio_between(a, b, confidence=0.99, same_campaign=True)), missed


def _side(r: int, steady: np.ndarray) -> Side:
    return Side("m", steady, block=f"block{r}", turns={0: float(np.mean(steady))})


def _excludes_1(ratio: Estimate) -> bool:
    return ratio.low is not None and ratio.high is not None and (ratio.low > 1 or ratio.high < 1)


def simulate(pairs: int, truth: float, first: int, cap: int, sd: float, mode_rate: float, mode_factor: float,
             seed: int, growth: float = 1.0, within: float | None = None, out_of_reach: bool = False
             ) -> tuple[Counter[str], int, int, int]:
    """The budget's decisions over `pairs` planted pairs, how many of the report's final intervals exclude 1,
    how many plain 99 % intervals of the same executions would, and how many report intervals miss the truth."""
    rng = np.random.default_rng(seed)
    states: Counter[str] = Counter()
    excluded = plain_excluded = missed = 0
    for _ in range(pairs):
        state, excludes, plain, miss = one_pair(rng, truth, first, cap, sd, mode_rate, mode_factor, growth, within,
                                                out_of_reach)
        states[state] += 1
        excluded += excludes
        plain_excluded += plain
        missed += miss
    return states, excluded, plain_excluded, missed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4000)
    ap.add_argument("--first", type=int, default=3)
    ap.add_argument("--cap", type=int, default=12)
    ap.add_argument("--sd", type=float, default=0.03)
    ap.add_argument("--mode-rate", type=float, default=0.1)
    ap.add_argument("--mode-factor", type=float, default=1.3)
    ap.add_argument("--growth", type=float, default=1.0, help="look_growth: 1, judged after every round")
    ap.add_argument("--within", type=float, default=None, help="decided_within, e.g. 0.05")
    ap.add_argument("--out-of-reach", action="store_true", help="the out-of-reach rule tried and not kept")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    level = stopping_confidence(args.first, args.cap, args.growth)
    print(f"{args.pairs} pairs a line; first {args.first}, cap {args.cap}, looks at "
          f"{', '.join(map(str, look_points(args.first, args.cap, args.growth)))}; spread {args.sd:.0%} (log sd), "
          f"modes {args.mode_rate:.0%} at ×{args.mode_factor:g}; decided at {level:.4%}")
    print("truth  faster  slower  equivalent  undecided  report's CI excludes 1  plain 99% CI excludes 1  "
          "report's CI misses the truth")
    for truth in (1.0, 1.01, 1.02, 1.05, 1.10):
        states, excluded, plain, missed = simulate(args.pairs, truth, args.first, args.cap, args.sd, args.mode_rate,
                                                   args.mode_factor, args.seed, args.growth, args.within,
                                                   args.out_of_reach)
        share = {k: v / args.pairs for k, v in states.items()}
        print(f"{truth:5.2f}  {share.get(question.FASTER, 0):6.2%}  {share.get(question.SLOWER, 0):6.2%}  "
              f"{share.get(question.EQUIVALENT, 0):10.2%}  {share.get(question.UNDECIDED, 0):9.2%}  "
              f"{excluded / args.pairs:22.2%}  {plain / args.pairs:23.2%}  {missed / args.pairs:.2%}")


if __name__ == "__main__":
    main()
