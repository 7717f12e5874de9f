"""evidence/layout_modes.py: which processes ran in a mode, by the layout they drew (a reading of stores)."""

from __future__ import annotations

from evidence.layout_modes import FAST, SLOW, USUAL, Process, by_campaign, by_pad, classify, split_blocks


def process(mechanism: str, seconds: float, heap_pad: int | None, campaign: int = 1, block: str | None = None
            ) -> Process:
    return Process("s.sqlite", campaign, block, mechanism, heap_pad, 0 if heap_pad is not None else None, seconds)


def test_a_mode_is_set_against_its_own_mechanisms_median() -> None:
    # the twin's median is 2 % higher: its usual processes stay usual, its own outliers are modes
    found = [process("a", 10.0, 1), process("a", 10.1, 2), process("a", 8.0, 3),
             process("b", 10.2, 4), process("b", 10.3, 5), process("b", 11.9, 6)]
    modes = classify(found, 0.12)
    assert [modes[p] for p in found] == [USUAL, USUAL, FAST, USUAL, USUAL, SLOW]


def test_modes_are_counted_by_the_heap_pad_drawn_and_a_fixed_layout_is_left_out() -> None:
    found = [process("a", 10.0, 10), process("a", 8.0, 300), process("a", 10.0, 400), process("a", 13.0, 600),
             process("a", 10.0, None)]
    rows = dict(by_pad(found, classify(found, 0.12), 256))
    assert list(rows) == [(0, 255), (256, 511), (512, 767)]
    assert (rows[(256, 511)]["all"], rows[(256, 511)][FAST], rows[(512, 767)][SLOW]) == (2, 1, 1)


def test_campaigns_count_the_pads_in_each_modes_range_and_that_mode_among_them() -> None:
    found = [process("a", 10.0, 400, campaign=1), process("a", 8.0, 450, campaign=1), process("a", 8.0, 9, campaign=1),
             process("a", 13.0, 3500, campaign=1), process("a", 8.0, 3600, campaign=1),
             process("a", 10.0, 500, campaign=2), process("a", 10.0, 3000, campaign=2),
             process("a", 10.0, 3100, campaign=2)]
    counts = dict(by_campaign(found, classify(found, 0.12), {FAST: (340, 720), SLOW: (3072, 4095)}))
    first, second = counts[("s.sqlite", 1)], counts[("s.sqlite", 2)]
    assert (first["all"], first[FAST], first[FAST, "in"], first[FAST, "in", FAST]) == (5, 3, 2, 1)
    assert (first[SLOW, "in"], first[SLOW, "in", SLOW], first[SLOW]) == (2, 1, 1)
    assert (second[FAST, "in"], second[FAST], second[SLOW, "in"], second[SLOW]) == (1, 0, 1, 0)


def test_a_block_is_split_when_its_members_modes_differ() -> None:
    found = [process("a", 10.0, 1, block="x"), process("b", 8.0, 1, block="x"),  # split
             process("a", 8.0, 2, block="y"), process("b", 8.1, 2, block="y"),  # both fast: alike
             process("a", 10.0, 3, block="z"),  # alone in its block: not counted
             process("a", 10.0, 8, block="w"), process("b", 10.0, 8, block="w"), # neither in a mode
             process("a", 10.0, 4), process("a", 10.0, 5), *(process("b", 10.0, k) for k in range(6, 10))]
    assert split_blocks(found, classify(found, 0.12)) == (1, 1, 1)
