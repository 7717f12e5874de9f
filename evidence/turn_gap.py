"""Whether a ratio's two turns are steadier when they are next to each other in a round: a replay of stored lock-step
campaigns, nothing is run.

    .venv/bin/python evidence/turn_gap.py STORE [STORE …] [--mechanism luajit2] [--later]

A round's order is drawn afresh (timing/lockstep.py), so a ratio's two turns sit 1 to (members - 1) places apart.
Taking turns cancels the host's speed steps that last longer than the time between the two turns, so if such steps
are common, a round's log ratio strays less from its block's mean when the turns are adjacent. For each ratio to the
baseline in every finished campaign: each steady round's log ratio less its block's mean (scaled by √(n / (n - 1))
for a block of n rounds, so that its variance is the round's), grouped by how many places apart the two turns were
(the positions the harness stored); per mechanism, the residual sd and mean absolute residual of each distance. What
an order that kept the pair adjacent would gain is the variance at distance 1 over the variance over all distances
as drawn. `--later`: only the blocks from the budget's process_executions on.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from bridgebench.store import Store
from bridgebench.timing.analysis import Rounds
from bridgebench.timing.stored_ratios import missing, pairings, stored_ratios


def positions(store: Store, campaign_id: int) -> dict[int, list[int]]:
    """Each lock-step execution's place in every round's order, by its execution id."""
    out = {}
    for e, pairing in pairings(store, campaign_id):
        if pairing.get("positions"):
            out[e.id] = [int(p) for p in pairing["positions"]]
    return out


def residuals(a: Rounds, b: Rounds, ids_a: dict[int, int], ids_b: dict[int, int], places: dict[int, list[int]],
              first: int) -> list[tuple[int, float]]:
    """(distance, residual) for every round both sides were steady in, in blocks of two such rounds or more;
    ids_*: each side's execution id by block round (pexec)."""
    out = []
    for r in sorted(set(a) & set(b)):
        if r < first or a[r].block is None or a[r].block != b[r].block:
            continue
        pa, pb = places.get(ids_a[r]), places.get(ids_b[r])
        rounds = sorted(set(a[r].turns) & set(b[r].turns))
        if pa is None or pb is None or len(rounds) < 2:
            continue
        logs = np.log([b[r].turns[i] / a[r].turns[i] for i in rounds])
        scale = math.sqrt(len(logs) / (len(logs) - 1))
        out += [(abs(pa[i] - pb[i]), float(x - logs.mean()) * scale) for i, x in zip(rounds, logs, strict=True)
                if i < len(pa) and i < len(pb)]
    return out


def by_distance(path: Path, mechanism: str | None, later: bool) -> dict[str, dict[int, list[float]]]:
    """Per mechanism, its rounds' residuals by the distance between its turn and the baseline's."""
    out: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    places: dict[int, dict[int, list[int]]] = {}
    for x in stored_ratios(path, mechanism):
        campaign = x.result.campaign
        first = x.first_later if later else 0
        if campaign.id not in places:
            places[campaign.id] = positions(x.store, campaign.id)
        ids_a = {run.pexec: run.execution_id for run in x.base.per_execution}
        ids_b = {run.pexec: run.execution_id for run in x.cell.per_execution}
        for distance, value in residuals(x.a, x.b, ids_a, ids_b, places[campaign.id], first):
            out[x.result.label(x.cell.mechanism)][distance].append(value)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", type=Path, nargs="+")
    ap.add_argument("--mechanism", help="only this mechanism's ratios (default: every mechanism's)")
    ap.add_argument("--later", action="store_true", help="only the later blocks (from process_executions on)")
    args = ap.parse_args()
    found: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    if error := missing(args.stores):
        print(error, file=sys.stderr)
        return 1
    for path in args.stores:
        for mech, distances in by_distance(path, args.mechanism, args.later).items():
            for d, values in distances.items():
                found[mech][d] += values
    if not found:
        print("no ratio has lock-step rounds with stored positions", file=sys.stderr)
        return 1
    print("| mechanism | places apart | rounds | sd of a round's log ratio about its block's | mean absolute |")
    print("|---|---|---|---|---|")
    for mech, distances in found.items():
        for d in sorted(distances):
            v = np.asarray(distances[d])
            print(f"| {mech} | {d} | {len(v)} | {v.std():.2%} | {np.abs(v).mean():.2%} |")
    print()
    for mech, distances in found.items():
        every = np.concatenate([np.asarray(v) for v in distances.values()])
        near = np.asarray(distances.get(1, []))
        if len(near) and len(every):
            print(f"{mech}: a round's variance next to each other over as drawn: {near.var() / every.var():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
