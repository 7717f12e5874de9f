"""evidence/aa.py, the real A/A script: what it does without running a campaign."""

from __future__ import annotations

from pathlib import Path

from bridgebench.store import Store
from evidence.aa import already


def test_a_rerun_continues_from_the_campaigns_the_store_holds(tmp_path: Path) -> None:
    # a rerun adds campaigns to the same store; its seeds start after those already there, so that no two
    # campaigns of a store draw the same orders
    path = tmp_path / "aa.sqlite"
    assert already(path) == 0
    store = Store(str(path))
    for _ in range(2):
        store.create_campaign("lua-vms", "studies/lua-vms", "hash", {}, "sha", {}, "machine", [])
    store.close()
    assert already(path) == 2
