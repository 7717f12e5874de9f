"""What δ does to the self-test's planted classes: every stored execution of a store's finished self-test
campaigns classified again at several δ (methodology §3), and the share classified as planted, per planted
benchmark. A benchmark of the harness's statistics (issue #22), not a test; nothing is run or stored.

    .venv/bin/bridgebench calibrate --store OUT/s.sqlite
    .venv/bin/bridgebench selftest -n 25 --store OUT/s.sqlite
    .venv/bin/python evidence/delta_sweep.py OUT/s.sqlite

It says whether the machine's calibrated δ (the campaigns' own, marked) puts the planted flat workload
where the self-test wants it, and what it costs the planted warm-ups and slowdowns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bridgebench.calibrate import DELTAS
from bridgebench.options import read
from bridgebench.selftest import PLANTED_CLASS
from bridgebench.stats.classify import classify_execution
from bridgebench.store import Store
from bridgebench.timing.analysis import Series, current_analysis

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--delta", type=float, action="append", help="δ to try (default: calibrate's range)")
    args = parser.parse_args()
    deltas = sorted(args.delta or DELTAS)
    store = Store(args.store, create=False)
    series = Series(store)
    campaigns = [c for c in store.campaigns("selftest") if c.state == "done"]
    if not campaigns:
        sys.exit(f"delta_sweep: no finished self-test campaign in {args.store}")
    # the δ each execution was classified with: its campaign's, or by its length where calibrated so
    own = sorted({read(c).options.delta_for(e.wall_s) for c in campaigns for e in store.executions(c.id)})
    right = {(b, d): 0 for b in PLANTED_CLASS for d in deltas}
    total = dict.fromkeys(PLANTED_CLASS, 0)
    for campaign in campaigns:
        for cell in current_analysis(store, campaign.id).cells:
            if cell.benchmark not in PLANTED_CLASS:
                continue
            for run in cell.per_execution:
                times = series.times(run)
                total[cell.benchmark] += 1
                for d in deltas:
                    right[cell.benchmark, d] += str(classify_execution(times, delta_relative=d).kind) \
                        == PLANTED_CLASS[cell.benchmark]
    print(f"{len(campaigns)} self-test campaigns in {args.store}; their own δ: "
          f"{', '.join(f'{d:.1%}' for d in own)}, each execution's by its length where calibrated so (marked *)")
    print("| planted | " + " | ".join(f"δ {d:.1%}{' *' if d in own else ''}" for d in deltas) + " |")
    print("|---" * (len(deltas) + 1) + "|")
    for bench, kind in PLANTED_CLASS.items():
        n = total[bench]
        cells = [f"{right[bench, d]}/{n} ({right[bench, d] / n:.1%})" if n else "—" for d in deltas]
        print(f"| {bench} ({kind}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
