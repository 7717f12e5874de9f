"""Gather the two sides of a diff from their analyses and hand them to the differ's rules. Nothing is
classified again: the steady iterations are the ones each analysis marked, and the ratio is
analysis.ratio_between, so `diff 3:base 3:x` prints the CI the report of campaign 3 prints for x."""

from __future__ import annotations

from dataclasses import replace

from bridgebench.instructions import INSTRUCTIONS, SECONDS, differences
from bridgebench.options import CPU_TIMED, TIMING, read
from bridgebench.report import speed
from bridgebench.store import Campaign, Store
from bridgebench.timing.analysis import Series, current_analysis, ratio_between
from bridgebench.timing.diff_rules import Comparison, compare_cells
from bridgebench.timing.result import Analysis


class DiffError(Exception):
    pass


def _machine_line(campaign: Campaign) -> str:
    env = campaign.environment
    return f"{env.get('hostname')}, {env.get('cpu_model')} × {env.get('cpu_count')}"


def _disturbance_note(ra: Analysis, rb: Analysis, same_campaign: bool) -> str:
    counts = [r.audit.disturbed for r in ((ra,) if same_campaign else (ra, rb))]
    if not any(counts):
        return ""
    left_out = " (left out)" if ra.audit.excluded else " (kept; --exclude-disturbed leaves them out)"
    return "; disturbed executions: " + (f"{counts[0]}" if same_campaign else f"A {counts[0]}, B {counts[1]}") \
        + left_out


def _files_note(a: Campaign, b: Campaign, same: bool) -> str:
    """Two campaigns of one study file may still have measured different code: the hash of the study's own
    files each campaign stored says so."""
    fa, fb = a.config.get("study_files"), b.config.get("study_files")
    if same or not fa or not fb or fa == fb:
        return ""
    return f"; THE STUDY'S FILES DIFFER between A and B ({fa} vs {fb}): the code measured changed"


def _boot_note(a: Campaign, b: Campaign) -> str:
    """A (virtual) machine booted again between two campaigns may have moved to another host."""
    ba, bb = a.environment.get("booted"), b.environment.get("booted")
    if not ba or not bb or ba == bb:
        return ""
    return f"; the machine booted again between them ({ba} for A, {bb} for B): a VM may then run on another host"


def _same_metric(a: Campaign, b: Campaign, cross_machine: bool, same: bool) -> None:
    """Counts compare with counts taken under the same pinning (instructions.py), times with times."""
    oa, ob = read(a).options, read(b).options
    metric_a, metric_b = getattr(oa, "metric", SECONDS), getattr(ob, "metric", SECONDS)
    if metric_a != metric_b:
        raise DiffError(f"campaign {a.id} measured {metric_a} and campaign {b.id} {metric_b}: counts and times "
                        "do not compare")
    turns_a, turns_b = (getattr(o, "turns", None) for o in (oa, ob))
    if turns_a != turns_b and {turns_a, turns_b} & set(CPU_TIMED):  # CPU time on a shared CPU pays for sharing
        #                                                  it, by mechanism and by partner (methodology §13)
        (cpu, turns), (other, others) = ((a, turns_a), (b, turns_b)) if turns_a in CPU_TIMED else \
            ((b, turns_b), (a, turns_a))
        timed = f"CPU time with --turns {others}" if others in CPU_TIMED else "wall time"
        raise DiffError(f"campaign {cpu.id} timed CPU time on a shared CPU (--turns {turns}) and campaign "
                        f"{other.id} {timed}: they do not compare")
    if metric_a != INSTRUCTIONS or same:
        return
    pa, pb = getattr(oa, "counting", None) or {}, getattr(ob, "counting", None) or {}
    differ = differences(pa, pb)
    if not differ:
        return
    what = "; ".join(f"{k}: {pa.get(k)} vs {pb.get(k)}" for k in differ)
    if differ != ["cpu"] or not cross_machine:
        raise DiffError(f"campaigns {a.id} and {b.id} counted instructions under different pinnings ({what}): "
                        "their counts do not compare" + ("; pass --cross-machine to compare across CPU models"
                                                         if differ == ["cpu"] else ""))


def compare(store: Store, ca: int, ma: str | None, cb: int, mb: str | None, *, cross_machine: bool = False,
            exclude_disturbed: bool = False, margin: float | None = None, store_b: Store | None = None,
            names: tuple[str, str] | None = None) -> tuple[list[Comparison], str]:
    """The comparisons, and a header line saying what was compared; `margin`: the equivalence margin the
    verdicts use (None: the study's, as A's analysis has it). B's campaign is in `store_b` when given (a
    baseline file: baseline.py), else in `store`; `names` name the sides where they are not the store's."""
    other = store_b or store
    same = other is store and ca == cb
    # The machine check reads the campaigns themselves, never a cached analysis.
    campaign_a, campaign_b = store.campaign(ca), other.campaign(cb)
    for campaign in (campaign_a, campaign_b):
        kind = read(campaign).kind
        if kind != TIMING:  # a load campaign's report compares its servers, at each load
            raise DiffError(f"campaign {campaign.id} is a {kind} campaign: its report compares its mechanisms "
                            f"(`bridgebench report {campaign.id}`); diff compares campaigns timed in iterations")
    same_machine = campaign_a.machine == campaign_b.machine
    if not same_machine and not cross_machine:
        raise DiffError(f"campaign {ca} ran on {_machine_line(campaign_a)} and campaign {cb} on "
                        f"{_machine_line(campaign_b)}: "
                        "timings from different machines do not compare; pass --cross-machine to compare anyway")
    _same_metric(campaign_a, campaign_b, cross_machine, same)
    ra = current_analysis(store, ca, exclude_disturbed)
    rb = ra if same else current_analysis(other, cb, exclude_disturbed)
    if ma is not None and mb is not None:
        for mech, result, cid in ((ma, ra, ca), (mb, rb, cb)):
            if not any(c.mechanism == mech for c in result.cells):
                raise DiffError(f"campaign {cid} has no results for mechanism {mech!r}")
        pairs = [((bench, ma), (bench, mb)) for bench in ra.benchmarks if rb.cell(bench, mb)]
    else:
        pairs = [(c.key, c.key) for c in ra.cells if rb.cell(*c.key)]
    pairs = [(ka, kb) for ka, kb in pairs if ra.cell(*ka)]
    if not pairs:
        raise DiffError(f"campaigns {ca} and {cb} share no benchmark × mechanism to compare")

    series_a, series_b = Series(store, ra.metric), Series(other, rb.metric)
    # Within one campaign the ratio is the one its budget judged (and may have stopped on): at its confidence.
    confidence = ra.interval_confidence if same else ra.confidence
    name_a, name_b = names or (str(ca), str(cb))
    comparisons = []
    for ka, kb in pairs:
        cell_a, cell_b = ra.cell(*ka), rb.cell(*kb)
        assert cell_a is not None and cell_b is not None
        sa, sb = series_a.steady(cell_a.per_execution), series_b.steady(cell_b.per_execution)
        ratio = ratio_between(sa, sb, confidence=confidence, same_campaign=same) if sa and sb else None
        compared = compare_cells(ka[0], f"{name_a}:{ka[1]}", f"{name_b}:{kb[1]}", cell_a, cell_b, ratio,
                                 ra.confidence, ra.equivalence if margin is None else margin)
        comparisons.append(replace(compared, metric=ra.metric))
    side_a = f"campaign {ca}" if names is None or names[0] == str(ca) else f"{names[0]} (campaign {ca})"
    side_b = f"campaign {cb}" if names is None or names[1] == str(cb) else f"{names[1]} (campaign {cb})"
    header = (f"A = {side_a} ({ra.campaign.study}), B = {side_b} ({rb.campaign.study}); "
              f"{'same machine' if same_machine else 'DIFFERENT MACHINES (--cross-machine)'}: "
              f"{_machine_line(campaign_a)}" + ("" if same_machine else f" vs {_machine_line(campaign_b)}")
              + _disturbance_note(ra, rb, same) + _files_note(campaign_a, campaign_b, same)
              + ("" if same else _boot_note(campaign_a, campaign_b) + speed.across(ra.campaign, rb.campaign))
              + f"; equivalent within ±{100 * (ra.equivalence if margin is None else margin):g}%")
    return comparisons, header
