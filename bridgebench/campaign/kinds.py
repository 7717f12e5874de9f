"""Every kind of campaign, by the name a campaign stores."""

from __future__ import annotations

from bridgebench.campaign import loadtest, timing
from bridgebench.campaign.kind import Kind
from bridgebench.options import read
from bridgebench.store import Campaign, Store, StoreError

KINDS: dict[str, Kind] = {k.name: k for k in (timing.KIND, loadtest.KIND)}
TIMING, LOAD = timing.KIND, loadtest.KIND


def of(campaign: Campaign) -> Kind:
    """The kind a stored campaign is of."""
    return KINDS[read(campaign).kind]


def stored(store: Store, campaign_id: int) -> Kind:
    """The kind of a stored campaign (timing, when there is no such campaign: the command then says so)."""
    try:
        return of(store.campaign(campaign_id))
    except StoreError:
        return TIMING
