"""How the report's "More time" projection (bridgebench/timing/more_time.py) compares with what more time did: for
a campaign that stopped out of time and was then resumed with `run --resume --max-time`, a copy of its store is cut
back to where it stopped, its projection is made there, and each benchmark's projection is set beside what the
resume did. A replay of a stored campaign, nothing is run.

    .venv/bin/python evidence/more_time_replay.py STORE [--campaign 1]

Where it stopped: the first judged round in which no cell was open. Each cell keeps the executions it had when
that round judged it (a cell settled before keeps all of its own). The copy's time cap is set back to the first
one the campaign had. Printed per benchmark with a ratio stopped out of time: the projection (blocks, seconds
more), its blocks at the ends of the spreads' intervals (the report's brackets), and, from the resumed campaign,
whether all its stopped ratios were decided, at how many blocks (the most of its ratios), whether that count lay
within the ends, and after how many seconds of executions since the resume its last one was.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sqlite3
import tempfile
from pathlib import Path

from bridgebench.result import OPEN, OUT_OF_TIME, SETTLED
from bridgebench.store import Store
from bridgebench.timing import more_time
from bridgebench.timing.analysis import analyse


def stop_counts(db: sqlite3.Connection, campaign: int) -> tuple[int, dict[tuple[str, str], int]]:
    """The round the campaign first stopped in, and each cell's executions as of it."""
    rounds: dict[int, list[tuple[str, str, int, str]]] = {}
    for r, b, m, n, s in db.execute("SELECT round, benchmark, mechanism, executions, state FROM cell_decision "
                                    "WHERE campaign_id=? ORDER BY round", (campaign,)):
        rounds.setdefault(r, []).append((b, m, n, s))
    stop = min(r for r, cells in rounds.items() if all(s != OPEN for *_, s in cells))
    counts = {}
    for r in sorted(rounds):
        if r <= stop:
            counts.update({(b, m): n for b, m, n, _ in rounds[r]})
    return stop, counts


def cut_back(source: Path, target: Path, campaign: int) -> tuple[int, dict[tuple[str, str], int]]:
    """A copy of the store as the campaign stood when it first stopped."""
    shutil.copy(source, target)
    db = sqlite3.connect(target)
    stop, counts = stop_counts(db, campaign)
    later = [i for i, b, m, p in db.execute("SELECT id, benchmark, mechanism, pexec FROM execution WHERE "
                                            "campaign_id=?", (campaign,)) if p >= counts.get((b, m), p + 1)]
    for table in ("series", "execution_class"):
        db.executemany(f"DELETE FROM {table} WHERE execution_id=?", [(i,) for i in later])
    db.executemany("DELETE FROM execution WHERE id=?", [(i,) for i in later])
    db.execute("DELETE FROM cell_decision WHERE campaign_id=? AND round>?", (campaign, stop))
    db.execute("DELETE FROM analysis WHERE campaign_id=?", (campaign,))
    config = json.loads(db.execute("SELECT config_json FROM campaign WHERE id=?", (campaign,)).fetchone()[0])
    options = config["options"]
    options["max_time_s"] = (options.get("earlier_max_time_s") or [options["max_time_s"]])[0]
    options["earlier_max_time_s"] = []
    db.execute("UPDATE campaign SET config_json=? WHERE id=?", (json.dumps(config), campaign))
    db.commit()
    db.close()
    return stop, counts


def within_ends(p: more_time.Projection, decided: bool, blocks: int) -> str:
    """Whether what the resume did lay within the projection's ends: a decided benchmark's count between them
    ("yes", "no"); an undecided one's "no" once past the high end, else "open" (it may yet); "—" unprojected."""
    if p.blocks_low is None:
        return "—"
    high = p.blocks_high if p.blocks_high is not None else math.inf  # out of reach at the high end: no bound
    if decided:
        return "yes" if p.blocks_low <= blocks <= high else "no"
    return "no" if blocks > high else "open"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--campaign", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cut = Path(scratch) / "cut.sqlite"
        stop, counts = cut_back(args.store, cut, args.campaign)
        store = Store(str(cut), create=False)
        try:
            then = analyse(store, args.campaign)
        finally:
            store.close()
    projections = list(then.more_time)  # as its report had them
    stopped = {(c.benchmark, c.mechanism) for c in then.cells
               if c.mechanism != then.baseline and c.adaptive and c.adaptive.state == OUT_OF_TIME}
    db = sqlite3.connect(args.store)
    last = {}
    for b, m, n, s in db.execute("SELECT benchmark, mechanism, executions, state FROM cell_decision WHERE "
                                 "campaign_id=? ORDER BY round", (args.campaign,)):
        last[(b, m)] = (n, s)
    spent, reached = 0.0, {}  # seconds of executions since the resume when a cell had its n-th execution
    for b, m, p, wall, waited in db.execute("SELECT benchmark, mechanism, pexec, wall_s, coalesce(waited_s, 0) "
                                            "FROM execution WHERE campaign_id=? ORDER BY seq", (args.campaign,)):
        if p >= counts.get((b, m), p + 1):
            spent += wall + waited
            reached[(b, m, p + 1)] = spent
    more = more_time.seconds_more(projections)
    print(f"stopped after round {stop}; projected: {more:.0f} s more for the projected benchmarks "
          f"(`--max-time {more_time.max_time(then, projections):g}`), resumed for {spent:.0f} s more")
    print("| benchmark | projected | blocks | at the spreads' ends | seconds more | resumed: all decided | at blocks "
          "| within the ends | after seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in projections:
        mine = [last[c] for c in sorted(stopped) if c[0] == p.benchmark]
        decided = all(s == SETTLED for _, s in mine)
        blocks = max(n for n, _ in mine)
        after = max((reached.get((p.benchmark, m, last[(p.benchmark, m)][0]), 0.0)
                     for b, m in stopped if b == p.benchmark), default=0.0)
        ends = (f"{p.blocks_low}–{p.blocks_high or 'out of reach'}" if p.blocks_low is not None else "—")
        inside = within_ends(p, decided, blocks)
        print(f"| {p.benchmark} | {p.state} | {p.blocks or '—'} | {ends} | "
              f"{f'{p.seconds:.0f}' if p.seconds is not None else '—'} | {'yes' if decided else 'no'} | {blocks} | "
              f"{inside} | {f'{after:.0f}' if decided else '—'} |")


if __name__ == "__main__":
    main()
