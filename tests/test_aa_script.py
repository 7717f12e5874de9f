"""evidence/aa.py, the real A/A script: what it does without running a campaign."""

from __future__ import annotations

from pathlib import Path

from bridgebench.store import Store
from evidence.aa import Way, already, first_seed, split


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
    assert first_seed([path, tmp_path / "none.sqlite"], None) == 2
    # --first-seed: campaigns added to those of a store that was lost start where its seeds ended, not at 0
    assert first_seed([path], 10) == 10


def test_each_way_names_only_what_varies_and_passes_its_options() -> None:
    # --turns separate,twins --layout drawn,shared: four stores, each named by both; one layout: by the turns alone
    way = Way("twins", "shared")
    assert way.options() == ["--turns", "twins", "--layout", "shared"]
    assert way.suffix(several_turns=True, several_layouts=True) == "-twins-shared"
    assert way.suffix(several_turns=False, several_layouts=True) == "-shared"
    assert Way(None, "drawn").options() == ["--layout", "drawn"]
    assert [w.options() for w in (Way(t, lay) for t in split(None) for lay in split(None))] == [[]]
