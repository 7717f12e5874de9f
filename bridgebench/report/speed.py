"""The line every report prints about the machine's speed as the campaign ran (reference.py): what the
reference loop read, beside the machine's calibration, and a warning when they are apart."""

from __future__ import annotations

import statistics
import time

from bridgebench.reference import APART, Reading, apart
from bridgebench.report import fmt
from bridgebench.result import CampaignFacts


def _by_machine(facts: CampaignFacts) -> dict[str, list[Reading]]:
    """The readings by the machine that took them, the campaign's own first (a fleet's workers take theirs
    on their own machines; readings stored without one are the campaign's)."""
    groups: dict[str, list[Reading]] = {facts.machine: []}
    for r in facts.speed:
        groups.setdefault(r.machine or facts.machine, []).append(r)
    return {m: rs for m, rs in groups.items() if rs}


def _cached(facts: CampaignFacts) -> list[tuple[str, float]]:
    """Each moment the campaign's own machine read the shared cache, with the share it held (shared_cache.py:
    what the loop cannot see)."""
    return [(r.moment, r.shared_held) for r in _by_machine(facts).get(facts.machine, []) if r.shared_held is not None]


def warning(facts: CampaignFacts) -> str | None:
    """Why the readings say the machine was not as usual, or None."""
    for machine, readings in _by_machine(facts).items():
        read = [r.iteration_s for r in readings if r.iteration_s]
        where = "" if machine == facts.machine else f" on machine {machine}"
        if len(read) >= 2 and apart(max(read) / min(read)):
            return f"its speed changed by {max(read) / min(read) - 1:.0%}{where} while the campaign ran"
        if facts.calibrated_s and read and machine == facts.machine:
            worst = max((s / facts.calibrated_s for s in read), key=lambda r: abs(r - 1))
            if apart(worst):
                return f"an iteration took {worst:.2f} times as long as in that calibration"
    return None


def _reading(r: Reading) -> str:
    if r.iteration_s:
        return f"{fmt.duration(r.iteration_s)} at the {r.moment}"
    return f"— at the {r.moment} (not read: {r.detail})"


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def line(facts: CampaignFacts) -> str | None:
    """The speed line, or None for a campaign stored before readings were taken."""
    if not facts.speed:
        return None
    cpus = {r.cpu for r in facts.speed}
    where = f" on CPU {cpus.pop()}" if len(cpus) == 1 and None not in cpus else ""
    groups = _by_machine(facts)
    out = (f"Machine speed: an iteration of the reference loop (probes/c/constant.c{where}) took "
           + "; ".join(_listed([_reading(r) for r in readings])
                       + ("" if machine == facts.machine and len(groups) == 1 else f" on machine {machine}")
                       for machine, readings in groups.items()))
    cached = _cached(facts)
    if cached:
        out += ("; the cache the cores share with other tenants (probes/c/chase.c: where a load over a quarter of it "
                "lay between one from memory, 0 %, and one in a core's own cache, 100 %) read "
                + _listed([f"{share:.0%} at the {moment}" for moment, share in cached]))
    if facts.calibrated_s:
        made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(facts.calibrated_at or 0))
        out += f"; the machine's calibration of {made} read {fmt.duration(facts.calibrated_s)}"
        out += f" ({facts.calibrated_elsewhere})" if facts.calibrated_elsewhere else ""
    else:
        out += "; the machine has no calibration to set it against (`bridgebench calibrate`)"
    why = warning(facts)
    if why:
        return (f"WARNING: {out}: {why} (beyond ±{APART:.0%}). A figure from this campaign may not compare with "
                "one taken at another speed, and the loop does not say how much a given workload lost.")
    return out + "."


def typical(facts: CampaignFacts) -> float | None:
    """The campaign's reference iteration: the median of its readings, or None without one."""
    groups = _by_machine(facts)
    own = groups.get(facts.machine) or [r for rs in groups.values() for r in rs]  # a fleet's: its workers'
    read = [r.iteration_s for r in own if r.iteration_s]
    return statistics.median(read) if read else None


def held(facts: CampaignFacts) -> float | None:
    """How much of the shared cache was the campaign's (shared_cache.py): the median of its own machine's
    readings, or None where none was read (a short campaign, or one stored before the readings)."""
    read = [share for _, share in _cached(facts)]
    return statistics.median(read) if read else None


def across(a: CampaignFacts, b: CampaignFacts) -> str:
    """What a diff of two campaigns says of the machine's speed in each (empty when either has no reading),
    and of the shared cache where both read it: the loop cannot see the cache, which memory-heavy benchmarks
    feel. Its share is given, not judged: no threshold has been set against a quiet day's readings yet."""
    sa, sb = typical(a), typical(b)
    if sa is None or sb is None:
        return ""
    ratio = sb / sa
    said = f"the reference loop took {fmt.duration(sa)} an iteration in A and {fmt.duration(sb)} in B"
    ha, hb = held(a), held(b)
    cache = "" if ha is None or hb is None else (
        f"; the cache the cores share with other tenants read {ha:.0%} ours in A and {hb:.0%} in B, which the loop "
        "cannot see (methodology §13, \"The shared cache\")")
    if apart(ratio):
        return (f"; THE MACHINE RAN AT ANOTHER SPEED: {said} ({ratio:.2f} times as long, beyond ±{APART:.0%}): "
                f"a difference between A and B may be the machine's{cache}")
    return f"; {said}{cache}"
