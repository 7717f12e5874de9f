"""Where a solo baseline's turns fell, and what they took: a reading of a twins campaign's store (`run --turns twins`,
the baseline taking a turn alone every round beside its turns with its twin; bridgebench/timing/lockstep.py). Not a
test; its figures go to docs/methodology.md §13.

    .venv/bin/python evidence/solo_turns.py STORE [--benchmarks havlak,json] [--mechanism luajit] [--from 3]

Two tables. First, per benchmark, the median mean of the baseline's turns alone that came right after its own turn
beside its twin in the same round, and of its other turns alone (a turn right after its own process's runs on
caches it left warm; since 83db0f7 the drawn orders keep the two apart, so a newer store has none of the first).
Second, per benchmark and mechanism, the median iteration of each execution from block --from on, as stored (the
baseline's: its turns alone), the baseline's median turn beside its twin, and the median wall time the probe
answered.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bridgebench.store import Store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--benchmarks", default=None, help="comma-separated: only these")
    ap.add_argument("--mechanism", default="luajit", help="the solo baseline")
    ap.add_argument("--from", dest="first", type=int, default=3, help="the first block of the second table")
    args = ap.parse_args()
    only = set(args.benchmarks.split(",")) if args.benchmarks else None
    store = Store(str(args.store), create=False)
    try:
        runs = [e for c in store.campaigns() for e in store.executions(c.id)
                if e.status == "ok" and e.info_json and (only is None or e.benchmark in only)]
        times = {eid: values for (eid, _), values in store.series([e.id for e in runs]).items()}
    finally:
        store.close()
    print("| benchmark | turns alone right after its turn beside its twin | the others | ratio |\n|---|---|---|---|")
    positions: dict[str, dict[bool, list[float]]] = {}
    for e in runs:
        pairing = json.loads(e.info_json).get("pairing", {})
        if e.mechanism != args.mechanism or "solo_positions" not in pairing:
            continue
        t, lead, turn = times[e.id], pairing["lead"], pairing["turn"]
        for r, (beside, alone) in enumerate(zip(pairing["positions"], pairing["solo_positions"], strict=True)):
            turn_times = t[lead + r * turn:lead + (r + 1) * turn]
            if len(turn_times) == turn:
                positions.setdefault(e.benchmark, {True: [], False: []})[alone == beside + 1].append(
                    statistics.fmean(turn_times))
    for benchmark, by in sorted(positions.items()):
        after, other = (statistics.median(by[k]) if by[k] else None for k in (True, False))
        ratio = f"×{after / other:.3f}" if after and other else "—"
        print(f"| {benchmark} | {_ms(after)} (n={len(by[True])}) | {_ms(other)} (n={len(by[False])}) | {ratio} |")
    print("\n| benchmark | mechanism | executions | each one's median iteration (ms) | the baseline's beside its twin "
          "| wall times answered |\n|---|---|---|---|---|---|")
    rows: dict[tuple[str, str], list[tuple[float, float | None, float | None]]] = {}
    for e in sorted(runs, key=lambda x: x.pexec):
        if e.pexec < args.first:
            continue
        info = json.loads(e.info_json)
        pairing, lead = info.get("pairing", {}), info.get("pairing", {}).get("lead", 0)
        twin, wall = pairing.get("twin_times"), info.get("wall_times")
        rows.setdefault((e.benchmark, e.mechanism), []).append(
            (statistics.median(times[e.id][lead:]), statistics.median(twin) if twin else None,
             statistics.median(wall[lead:]) if wall else None))
    for (benchmark, mechanism), found in sorted(rows.items()):
        print(f"| {benchmark} | {mechanism} | {len(found)} | {_list(x[0] for x in found)} | "
              f"{_list(x[1] for x in found)} | {_list(x[2] for x in found)} |")


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds is not None else "—"


def _list(values: object) -> str:
    known = [v for v in values if v is not None]  # type: ignore[attr-defined]
    return ", ".join(f"{v * 1e3:.1f}" for v in known) if known else "—"


if __name__ == "__main__":
    main()
