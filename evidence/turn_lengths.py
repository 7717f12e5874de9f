"""The turns a campaign's later lock-step blocks took, beside the turns each way of sizing them gives: a replay of
stored campaigns, nothing is run.

    .venv/bin/python evidence/turn_lengths.py STORE [STORE …] [--unlike]

For each finished campaign sized by time (`turn_s`), each benchmark and each mechanism against the baseline: the
later blocks (from the budget's process_executions on) they shared, in how many of those their turns were of unlike
lengths, each side's iteration as the benchmark's first executions estimate it (what the harness sized the turns
from, analysis.first_iteration_seconds), and the two sides' turns from those estimates by each rule of
timing/lockstep.timed_turns: every member rounded to `turn_s` on its own ("own", before 2026-11-30), and anchored to
the baseline's turn with copies of a VM (`twin_of`, from the study file the campaign ran) taking its turn
("anchored"). `--unlike`: only the rows where the turns were unlike, or either rule would make them so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bridgebench.store import Store
from bridgebench.study import STUDIES_DIR, read_study
from bridgebench.timing import lockstep
from bridgebench.timing.analysis import current_analysis, first_iteration_seconds
from bridgebench.timing.stored_ratios import missing, pairings

Row = tuple[str, str, str, int, int, float, float, tuple[int, int], tuple[int, int]]


def later_turns(store: Store, campaign_id: int, first: int) -> dict[tuple[str, str], dict[str, int]]:
    """Each later block's members' turns, by (benchmark, block), by mechanism."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for e, pairing in pairings(store, campaign_id, first):
        out.setdefault((e.benchmark, pairing["block"]), {})[e.mechanism] = int(pairing["turn"])
    return out


def copies(study_path: Path, study: str) -> dict[str, str | None]:
    """Each mechanism's `twin_of`, from the study file the campaign ran (else this repository's of that name); none
    known where neither is here (then the anchored rule is shown without copies)."""
    for path in (study_path, STUDIES_DIR / study / "study.toml"):
        if path.is_file():
            return {m: s.twin_of for m, s in read_study(path).mechanisms.items()}
    return {}


def rules(names: list[str], seconds: list[float], turn_s: float, baseline: str, twin_of: dict[str, str | None]
          ) -> tuple[list[int], list[int]]:
    """The members' turns rounded each on its own, and anchored to the baseline's with copies taking their VM's."""
    iterations = [1] * len(names)  # the turns do not depend on how many iterations each makes
    anchor, copy_of = lockstep.anchoring(names, baseline, twin_of)
    return (lockstep.timed_turns(iterations, seconds, turn_s)[1],
            lockstep.timed_turns(iterations, seconds, turn_s, anchor, copy_of)[1])


def rows(path: Path) -> list[Row]:
    out: list[Row] = []
    store = Store(path, create=False)
    try:
        for campaign in (c for c in store.campaigns() if c.state == "done"):
            result = current_analysis(store, campaign.id)
            options = result.campaign.options
            turn_s, baseline = options.get("turn_s"), result.baseline
            if not turn_s or baseline is None:
                continue
            first = int(options.get("process_executions") or 0)
            twin_of = copies(Path(campaign.study_path), result.campaign.study)
            blocks = later_turns(store, campaign.id, first)
            for benchmark in result.benchmarks:
                estimates = first_iteration_seconds(store, campaign.id, benchmark, first)
                names = [m for m in estimates if estimates[m]]
                if baseline not in names:
                    continue
                own, anchored = rules(names, [estimates[m] for m in names], turn_s, baseline, twin_of)
                b = names.index(baseline)
                for i, mech in enumerate(names):
                    shared = [t for (bench, _), t in blocks.items()
                              if bench == benchmark and baseline in t and mech in t]
                    if i == b or not shared:
                        continue
                    out.append((f"{path.name} #{campaign.id}", benchmark, result.label(mech), len(shared),
                                sum(t[baseline] != t[mech] for t in shared), estimates[baseline], estimates[mech],
                                (own[b], own[i]), (anchored[b], anchored[i])))
    finally:
        store.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", type=Path, nargs="+")
    ap.add_argument("--unlike", action="store_true", help="only rows where the turns were or would be unlike")
    args = ap.parse_args()
    if error := missing(args.stores):
        print(error, file=sys.stderr)
        return 1
    found = [r for path in args.stores for r in rows(path)]
    if args.unlike:
        found = [r for r in found if r[4] or r[7][0] != r[7][1] or r[8][0] != r[8][1]]
    if not found:
        print("no later lock-step blocks sized by time", file=sys.stderr)
        return 1
    print("| campaign | benchmark | mechanism | later blocks | turns unlike | iteration (ms): baseline, it | own | "
          "anchored |\n|---|---|---|---|---|---|---|---|")
    for where, benchmark, mech, n, unlike, s_base, s_it, own, anchored in found:
        print(f"| {where} | {benchmark} | {mech} | {n} | {unlike} | {s_base * 1000:.1f}, {s_it * 1000:.1f} | "
              f"{own[0]}, {own[1]} | {anchored[0]}, {anchored[1]} |")
    print(f"\n{len(found)} rows; later blocks {sum(r[3] for r in found)}, their turns unlike in "
          f"{sum(r[4] for r in found)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
