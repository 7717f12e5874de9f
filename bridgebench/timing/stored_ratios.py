"""Every ratio to the baseline in a store's finished campaigns, with its two sides' steady rounds as the analysis reads
them, and every lock-step execution with what the harness stored of its block: what the replays of stored campaigns in
evidence/ walk over."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bridgebench.store import Store, StoredExecution
from bridgebench.timing.analysis import Rounds, Series, current_analysis, lockstep_blocks
from bridgebench.timing.result import Analysis, Cell


@dataclass(frozen=True)
class StoredRatio:
    where: str  # the store's file name and the campaign's id, as a table row names it
    store: Store  # open while the iteration runs
    result: Analysis
    base: Cell
    cell: Cell
    a: Rounds  # the baseline's steady rounds
    b: Rounds  # the cell's

    @property
    def first_later(self) -> int:
        """The first later block's round: the budget's first process executions come before it."""
        return int(self.result.campaign.options.get("process_executions") or 0)

    def blocks(self, first: int = 0) -> dict[str, tuple[list[float], list[float]]]:
        """The ratio's lock-step blocks (analysis.lockstep_blocks), from round `first` on."""
        return lockstep_blocks({r: s for r, s in self.a.items() if r >= first},
                               {r: s for r, s in self.b.items() if r >= first})


def stored_ratios(path: Path, mechanism: str | None = None,
                  cells: Callable[[Analysis], Iterable[Cell]] | None = None) -> Iterator[StoredRatio]:
    """Each ratio to the baseline in the store's finished campaigns (only `mechanism`'s where given; `cells`: which of
    a campaign's cells, default all), the store closed at the end."""
    store = Store(path, create=False)
    try:
        for campaign in (c for c in store.campaigns() if c.state == "done"):
            result = current_analysis(store, campaign.id)
            if result.baseline is None:
                continue
            series = Series(store, result.metric)
            for c in (cells(result) if cells else result.cells):
                base = result.cell(c.benchmark, result.baseline)
                if base is None or c.mechanism == result.baseline or (mechanism and c.mechanism != mechanism):
                    continue
                a, b = (series.steady(x.per_execution) for x in (base, c))
                yield StoredRatio(f"{path.name} #{campaign.id}", store, result, base, c, a, b)
    finally:
        store.close()


def missing(paths: Iterable[Path]) -> str | None:
    """The one-line error for the first path that is not there, or None."""
    return next((f"{p}: no such store" for p in paths if not p.exists()), None)


def pairings(store: Store, campaign_id: int, first: int = 0) -> Iterator[tuple[StoredExecution, dict]]:
    """Each execution of the campaign that ran in a lock-step block, from round `first` on, with all the harness
    stored of its block (timing/lockstep.run_block: its turn, rounds, positions, wall times)."""
    for e in store.executions(campaign_id):
        pairing = json.loads(e.info_json).get("pairing") if e.info_json and e.pexec >= first else None
        if isinstance(pairing, dict):
            yield e, pairing
