"""Gather the two sides of a diff from the store and hand them to the differ's rules."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from bridgebench.analysis import current_analysis, steady_samples
from bridgebench.differ import Comparison, compare_cells
from bridgebench.stats import ratio_ci
from bridgebench.store import Campaign, Store


class DiffError(Exception):
    pass


def _machine_line(campaign: Campaign) -> str:
    env = campaign.environment
    return f"{env.get('hostname')}, {env.get('cpu_model')} × {env.get('cpu_count')}"


def _disturbance_note(ra: dict, rb: dict, same_campaign: bool) -> str:
    counts = [r.get("audit", {}).get("disturbed", 0) for r in ((ra,) if same_campaign else (ra, rb))]
    if not any(counts):
        return ""
    left_out = " (left out)" if ra.get("audit", {}).get("excluded") else " (kept; --exclude-disturbed leaves them out)"
    return "; disturbed executions: " + (f"{counts[0]}" if same_campaign else f"A {counts[0]}, B {counts[1]}") \
        + left_out


def compare(store: Store, ca: int, ma: str | None, cb: int, mb: str | None, *, cross_machine: bool = False,
            seed: int = 0, confidence: float = 0.99, exclude_disturbed: bool = False
            ) -> tuple[list[Comparison], str]:
    # The machine check reads the campaigns themselves, never a cached analysis.
    campaign_a, campaign_b = store.campaign(ca), store.campaign(cb)
    same_machine = campaign_a.machine == campaign_b.machine
    if not same_machine and not cross_machine:
        raise DiffError(f"campaign {ca} ran on {_machine_line(campaign_a)} and campaign {cb} on "
                        f"{_machine_line(campaign_b)}: "
                        "timings from different machines do not compare; pass --cross-machine to compare anyway")
    ra, rb = (current_analysis(store, ca, exclude_disturbed), current_analysis(store, cb, exclude_disturbed))
    cells_a = {(c["benchmark"], c["mechanism"]): c for c in ra["cells"]}
    cells_b = {(c["benchmark"], c["mechanism"]): c for c in rb["cells"]}
    if ma is not None and mb is not None:
        for mech, cells, cid in ((ma, cells_a, ca), (mb, cells_b, cb)):
            if not any(m == mech for _, m in cells):
                raise DiffError(f"campaign {cid} has no results for mechanism {mech!r}")
        pairs = [((bench, ma), (bench, mb)) for bench in ra["benchmarks"] if (bench, mb) in cells_b]
    else:
        pairs = [(key, key) for key in cells_a if key in cells_b]
    if not pairs:
        raise DiffError(f"campaigns {ca} and {cb} share no benchmark × mechanism to compare")

    samples_a = steady_samples(store, ca, exclude_disturbed)
    samples_b = samples_a if cb == ca else steady_samples(store, cb, exclude_disturbed)
    rng = np.random.default_rng(seed)
    comparisons = []
    for ka, kb in pairs:
        sa, sb = samples_a.get(ka), samples_b.get(kb)
        ratio = None
        if sa and sb:
            ratio = asdict(ratio_ci(sa, sb, confidence=confidence, rng=rng))
        name_a, name_b = (f"{ca}:{ka[1]}", f"{cb}:{kb[1]}")
        comparisons.append(compare_cells(ka[0], name_a, name_b, cells_a[ka], cells_b[kb], ratio, confidence))
    header = (f"A = campaign {ca} ({ra['campaign']['study']}), B = campaign {cb} ({rb['campaign']['study']}); "
              f"{'same machine' if same_machine else 'DIFFERENT MACHINES (--cross-machine)'}: "
              f"{_machine_line(campaign_a)}" + ("" if same_machine else f" vs {_machine_line(campaign_b)}")
              + _disturbance_note(ra, rb, ca == cb))
    return comparisons, header
