"""What the first iteration of a lock-step turn costs, read from stored campaigns: between two of a member's turns
the block's other processes run on its CPU, so the first iteration of each turn starts with caches (and
whatever else a core keeps) that another process used. A member whose turn is several iterations shows it as
its turns' first iterations against the rest of the same turns; a member whose turn is one iteration pays it
on every iteration. A ratio between members whose turns differ in length (an interpreter's one long iteration
against a JIT's many short ones, or twins sized apart) then carries the difference. A benchmark of the
harness's method on this machine (issue #40), not a test; nothing is run.

    .venv/bin/python evidence/turn_first.py STORE [--pair lua51:lua51-again] [--pair luajit:lua51] …

First table, per benchmark and mechanism, from the lock-step executions whose turn is 2 or more iterations:
the mean over executions of log(turn's first iteration / the mean of the turn's others), over the rounds after
the first, as a factor with its 99 % interval over executions (Student's t). Then, for each --pair A:B and
benchmark, B over A from the blocks where both ran: each block's mean over its rounds of log(B's turn mean /
A's turn mean), with every round's turn as it ran ("as run", the analysis's rule, though here over all rounds
after the leads rather than the steady ones only) and with each turn cut to its first iteration ("first
iterations": both sides after another process ran), and, from the blocks where both sides' turns were two
iterations or more, with each turn's first left out ("the rest of the turns": both sides warm, as a sequential
run's iterations after the first are), Student's t over blocks (stats.lockstep).
The two readings that pick iterations by their place in a turn are biased where a benchmark has a rhythm of its
own in step with the turns (havlak: a heavy iteration every other one, ×2.4 on LuaJIT with nothing between the
turns; evidence/turn_cause.py), and so is the first table there; "as run" counts whole turns and is not.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from bridgebench.report import fmt
from bridgebench.stats.executions import over_executions
from bridgebench.stats.lockstep import lockstep_ratio
from bridgebench.store import Store

REPO = Path(__file__).resolve().parents[1]


def turns_of(times: np.ndarray, pairing: dict) -> np.ndarray:
    """The iterations after the lead, one row a round, one column a turn's iteration."""
    lead, turn, rounds = pairing["lead"], max(1, pairing["turn"]), pairing["rounds"]
    return times[lead:lead + turn * rounds].reshape(rounds, turn)


def load(store: Store) -> list[tuple[int, str, str, dict, np.ndarray]]:
    """Every successful lock-step execution of every campaign: (campaign, benchmark, mechanism, pairing, turns)."""
    out = []
    for campaign in store.campaigns():
        runs = [e for e in store.executions(campaign.id) if e.status == "ok" and e.info_json]
        series = store.series([e.id for e in runs])
        for e in runs:
            pairing = json.loads(e.info_json or "{}").get("pairing")
            times = series.get((e.id, "seconds"))
            # Interleaved (`run --turns interleaved`), a shared turn's every iteration follows another process:
            # no iteration of it is a turn's first in the sense read here.
            if pairing and pairing.get("interleaved_with"):
                continue
            if pairing and times is not None and len(times) >= pairing["lead"] + pairing["turn"] * pairing["rounds"]:
                out.append((campaign.id, e.benchmark, e.mechanism, pairing, turns_of(times, pairing)))
    return out


def penalties(runs: list[tuple[int, str, str, dict, np.ndarray]]) -> None:
    by_cell: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _, benchmark, mechanism, _, turns in runs:
        if turns.shape[1] >= 2 and turns.shape[0] >= 2:
            first, rest = turns[1:, 0], turns[1:, 1:].mean(axis=1)
            by_cell[(benchmark, mechanism)].append(float(np.mean(np.log(first / rest))))
    print("| benchmark | mechanism | executions | a turn's first iteration / its others (99 %) |")
    print("|---|---|---|---|")
    for (benchmark, mechanism), logs in sorted(by_cell.items()):
        ratios = [math.exp(x) for x in logs]
        print(f"| {benchmark} | {mechanism} | {len(logs)} | "
              f"{fmt.ratio(over_executions(ratios, confidence=0.99, scale='log', min_executions=3), precise=True)} |")


def pairs(runs: list[tuple[int, str, str, dict, np.ndarray]], specs: list[str]) -> None:
    blocks: dict[tuple[int, str, str], dict[str, np.ndarray]] = defaultdict(dict)
    for campaign, benchmark, mechanism, pairing, turns in runs:
        blocks[(campaign, benchmark, pairing["block"])][mechanism] = turns
    print("\n| pair | benchmark | blocks | turns (A, B) | B / A as run | B / A, first iterations | B / A, the rest of "
          "the turns (blocks) |")
    print("|---|---|---|---|---|---|---|")
    for spec in specs:
        a, _, b = spec.partition(":")
        by_benchmark: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
        for (_, benchmark, _), members in blocks.items():
            if a in members and b in members and len(members[a]) == len(members[b]):
                by_benchmark[benchmark].append((members[a], members[b]))
        for benchmark, both in sorted(by_benchmark.items()):
            run = [(ta.mean(axis=1), tb.mean(axis=1)) for ta, tb in both]
            first = [(ta[:, 0], tb[:, 0]) for ta, tb in both]
            rest = [(ta[:, 1:].mean(axis=1), tb[:, 1:].mean(axis=1)) for ta, tb in both
                    if ta.shape[1] >= 2 and tb.shape[1] >= 2]
            widths = sorted({(ta.shape[1], tb.shape[1]) for ta, tb in both})
            shown = ", ".join(f"{x}:{y}" for x, y in widths[:3]) + (" …" if len(widths) > 3 else "")
            warm = f"{fmt.ratio(lockstep_ratio(rest), precise=True)} ({len(rest)})" if rest else "—"
            print(f"| {a}:{b} | {benchmark} | {len(both)} | {shown} | "
                  f"{fmt.ratio(lockstep_ratio(run), precise=True)} | "
                  f"{fmt.ratio(lockstep_ratio(first), precise=True)} | {warm} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--pair", action="append", default=[], help="A:B, two mechanisms of the same blocks")
    args = ap.parse_args()
    runs = load(Store(args.store, create=False))
    if not runs:
        print(f"{args.store}: no lock-step executions", file=sys.stderr)
        return 1
    penalties(runs)
    pairs(runs, args.pair)
    return 0


if __name__ == "__main__":
    sys.exit(main())
