"""Which process executions of a benchmark ran in a mode, and the layouts they drew. A reading of stores, not a test.

LuaJIT's nbody runs some processes about 23 % faster than the rest (2026-11-28). Whether such a mode follows the
layout a process drew (bridgebench/timing/layout.py) or something else decides what can be done about it: drawn
layouts make it part of the answer, one layout a block (`--layout shared`) cancels it in a block's ratio where
the members answer a layout alike. For each process of the benchmark: its steady speed, the median of its last
--tail iterations, against its mechanism's median over every store read; a process is *fast* or *slow* when it is
more than --by from it. Printed: the modes by the heap pad the process drew (bins of --width bytes), by campaign
(how many of its processes drew a pad in --fast-range and how many of those were fast, the same for
--slow-range and slow, and the modes elsewhere), and the blocks whose members were in different modes (the blocks a
mode swings) against those whose members were in the same.

    .venv/bin/python evidence/layout_modes.py OUT/known-separate.sqlite [more.sqlite ...] --benchmark nbody
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from bridgebench.store import Store

FAST, SLOW, USUAL = "fast", "slow", "usual"


@dataclass(frozen=True)
class Process:
    store: str
    campaign: int
    block: str | None  # its lock-step block, None if it ran alone
    mechanism: str
    heap_pad: int | None  # its layout draws (None: fixed layout)
    env_pad: int | None
    steady_s: float  # the median of its last iterations


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path, nargs="+")
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--tail", type=int, default=10, help="the last iterations whose median is a process's speed")
    ap.add_argument("--by", type=float, default=0.12, help="a mode: this far from its mechanism's median")
    ap.add_argument("--width", type=int, default=256, help="heap pad bins, in bytes")
    ap.add_argument("--fast-range", default="340-720", help="heap pads whose fast processes a campaign counts")
    ap.add_argument("--slow-range", default="3072-4095", help="heap pads whose slow processes a campaign counts")
    args = ap.parse_args()
    found = [p for path in args.store for p in processes(path, args.benchmark, args.tail)]
    if not found:
        raise SystemExit(f"no process of {args.benchmark} with {args.tail} iterations in the stores")
    modes = classify(found, args.by)
    fast_range, slow_range = pad_range(args.fast_range), pad_range(args.slow_range)
    print(f"{len(found)} processes of {args.benchmark}; a mode is more than {args.by:.0%} from its mechanism's "
          "median: " + ", ".join(f"{m} {s * 1e3:.2f} ms" for m, s in sorted(centres(found).items())))
    print("\n| heap pad | processes | fast | slow |\n|---|---|---|---|")
    for (start, end), counts in by_pad(found, modes, args.width):
        print(f"| {start}–{end} | {counts['all']} | {counts[FAST]} | {counts[SLOW]} |")
    print(f"\n| store | campaign | processes | pad in {fast_range[0]}–{fast_range[1]}: fast | "
          f"pad in {slow_range[0]}–{slow_range[1]}: slow | fast, slow elsewhere |\n|---|---|---|---|---|---|")
    for (store, campaign), c in by_campaign(found, modes, {FAST: fast_range, SLOW: slow_range}):
        fast_in, slow_in = c[FAST, "in", FAST], c[SLOW, "in", SLOW]
        print(f"| {store} | {campaign} | {c['all']} | {c[FAST, 'in']}: {fast_in} | {c[SLOW, 'in']}: {slow_in} | "
              f"{c[FAST] - fast_in}, {c[SLOW] - slow_in} |")
    split, together, usual = split_blocks(found, modes)
    print(f"\nblocks of two or more: members in different modes {split}, all in the same mode {together}, "
          f"none in a mode {usual}")


def processes(path: Path, benchmark: str, tail: int) -> list[Process]:
    """The store's processes of the benchmark that ran at least `tail` iterations."""
    store = Store(str(path), create=False)
    try:
        out = []
        for campaign in store.campaigns():
            runs = [e for e in store.executions(campaign.id) if e.benchmark == benchmark and e.status == "ok"]
            times = store.series([e.id for e in runs])
            for e in runs:
                seconds = times.get((e.id, "seconds"))
                if seconds is None or len(seconds) < tail:
                    continue
                info = json.loads(e.info_json or "{}")
                drawn = info.get("layout") or {}
                out.append(Process(path.name, campaign.id, (info.get("pairing") or {}).get("block"), e.mechanism,
                                   drawn.get("heap_pad"), drawn.get("env_pad"),
                                   float(statistics.median(seconds[-tail:]))))
        return out
    finally:
        store.close()


def centres(found: list[Process]) -> dict[str, float]:
    """Each mechanism's median steady speed over its processes."""
    by_mechanism: dict[str, list[float]] = collections.defaultdict(list)
    for p in found:
        by_mechanism[p.mechanism].append(p.steady_s)
    return {m: statistics.median(v) for m, v in by_mechanism.items()}


def classify(found: list[Process], by: float) -> dict[Process, str]:
    """Each process's mode against its mechanism's median over all of them."""
    centre = centres(found)
    return {p: FAST if p.steady_s < centre[p.mechanism] * (1 - by)
            else SLOW if p.steady_s > centre[p.mechanism] * (1 + by) else USUAL for p in found}


def by_pad(found: list[Process], modes: dict[Process, str], width: int
           ) -> list[tuple[tuple[int, int], collections.Counter[str]]]:
    """Processes and modes per bin of the heap pad they drew (those with a fixed layout left out)."""
    bins: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for p in found:
        if p.heap_pad is not None:
            bins[p.heap_pad // width].update(("all", modes[p]))
    return [((b * width, b * width + width - 1), bins[b]) for b in sorted(bins)]


def pad_range(text: str) -> tuple[int, int]:
    low, high = (int(x) for x in text.split("-"))
    return low, high


def by_campaign(found: list[Process], modes: dict[Process, str], ranges: dict[str, tuple[int, int]]
                ) -> list[tuple[tuple[str, int], collections.Counter]]:
    """Per campaign: "all" processes, each mode's count, and for each mode's range of heap pads (FAST, "in") the
    processes that drew a pad in it and (FAST, "in", FAST) how many of those were in that mode."""
    counts: dict[tuple[str, int], collections.Counter] = collections.defaultdict(collections.Counter)
    for p in found:
        c = counts[(p.store, p.campaign)]
        c.update(("all", modes[p]))
        for mode, (low, high) in ranges.items():
            if p.heap_pad is not None and low <= p.heap_pad <= high:
                c.update([(mode, "in"), *([(mode, "in", mode)] if modes[p] == mode else [])])
    return sorted(counts.items())


def split_blocks(found: list[Process], modes: dict[Process, str]) -> tuple[int, int, int]:
    """Blocks of two or more members: those whose members' modes differ, those whose members were all in one
    mode (fast or slow), and those with none in a mode."""
    blocks: dict[tuple[str, int, str], set[str]] = collections.defaultdict(set)
    sizes: collections.Counter[tuple[str, int, str]] = collections.Counter()
    for p in found:
        if p.block is not None:
            blocks[(p.store, p.campaign, p.block)].add(modes[p])
            sizes[(p.store, p.campaign, p.block)] += 1
    paired = [blocks[k] for k in blocks if sizes[k] > 1]
    split = sum(len(m) > 1 for m in paired)
    usual = sum(m == {USUAL} for m in paired)
    return split, len(paired) - split - usual, usual


if __name__ == "__main__":
    main()
