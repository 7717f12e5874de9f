"""Every kind of campaign, by the name a campaign stores."""

from __future__ import annotations

from bridgebench.campaign import load, timing
from bridgebench.campaign.kind import Kind
from bridgebench.options import read
from bridgebench.store import Campaign

KINDS: dict[str, Kind] = {k.name: k for k in (timing.KIND, load.KIND)}
TIMING, LOAD = timing.KIND, load.KIND


def of(campaign: Campaign) -> Kind:
    """The kind a stored campaign is of."""
    return KINDS[read(campaign).kind]
