"""Counts beside time: a counted campaign's ratios set next to a timed campaign's, cell by cell.

A ratio of instruction counts is not a ratio of times (instructions.py says what counts leave out), so a
counted campaign's analysis carries, where the store has one, the time ratio of each cell from a timed
campaign that ran the same work: the newest finished timed campaign of the same study, on the same machine,
with the same baseline and every shared benchmark at the same parameter (a counted campaign runs at each
benchmark's count_param unless its budget says `count_sizes = false`; a timed budget with `count_sizes = true`
times the study there). Per cell: both ratios,
count over time, and whether the time ratio's interval holds the count ratio; over the cells, Spearman's
rank correlation, so a user sees when counts may stand in for time.
"""

from __future__ import annotations

import math

from bridgebench.instructions import INSTRUCTIONS, SECONDS
from bridgebench.options import TimingOptions, read
from bridgebench.store import Campaign, Store
from bridgebench.timing.result import Analysis, BesideTime, CountTimePair

MIN_PAIRS_FOR_RANKS = 3  # below this, a rank correlation says nothing


def _same_work(counted: Campaign, timed: Campaign) -> bool:
    a, b = read(counted), read(timed)
    if not isinstance(b.options, TimingOptions) or b.options.metric != SECONDS or timed.state != "done":
        return False
    if timed.machine != counted.machine or a.baseline != b.baseline:
        return False
    shared = set(a.options.benchmarks) & set(b.options.benchmarks)
    return bool(shared) and all(a.param(x) == b.param(x) for x in shared)


def partner(store: Store, campaign_id: int) -> Campaign | None:
    """The timed campaign a counted one is set beside (the module's doc says which), or None."""
    counted = store.campaign(campaign_id)
    options = read(counted).options
    if not isinstance(options, TimingOptions) or options.metric != INSTRUCTIONS:
        return None
    found = [c for c in store.campaigns(counted.study) if c.id != campaign_id and _same_work(counted, c)]
    return found[-1] if found else None


def key(store: Store, campaign_id: int) -> tuple[int, int] | None:
    """What a stored BesideTime must match to be current: its timed campaign, and that one's executions."""
    timed = partner(store, campaign_id)
    return (timed.id, len(store.executions(timed.id))) if timed else None


def pair(counted: Analysis, timed: Analysis) -> BesideTime:
    """Each cell with a ratio to the baseline in both analyses, the baseline's own left out."""
    pairs = []
    for c in counted.cells:
        t = timed.cell(c.benchmark, c.mechanism)
        if c.mechanism != counted.baseline and c.ratio and t is not None and t.ratio:
            pairs.append(CountTimePair(c.benchmark, c.mechanism, c.ratio.value, t.ratio))
    return of_pairs(timed, tuple(pairs))


def of_pairs(timed: Analysis, pairs: tuple[CountTimePair, ...]) -> BesideTime:
    """These pairs with their rank correlation (a subset of pair()'s, say one mechanism's)."""
    rho = None
    if len(pairs) >= MIN_PAIRS_FOR_RANKS:
        from scipy.stats import spearmanr  # imported when used: scipy costs the CLI ~0.8 s to start

        rho = float(spearmanr([p.count_ratio for p in pairs], [p.time_ratio.value for p in pairs]).statistic)
        rho = None if math.isnan(rho) else rho
    return BesideTime(timed.campaign.id, timed.campaign.executions_stored, pairs, rho)
