"""How much of the cache its cores share with the host's other tenants this machine has to itself now, read with a
pointer chase (probes/c/chase.c) by `doctor`, and beside the reference loop by campaigns with a time cap of a minute
or more (campaign/engine.read_speed).

Why: the reference loop (reference.py) works in 32 KiB, a core's own cache, so it reads the core and nothing the
core shares. On this project's VM, on a boot whose host was busy, it read 1.2 times its usual iteration while
PUC Lua 5.1's fannkuch probe ran 1.4 to 2.3 times as slowly (307–496 ms an iteration against about 215: the rows of
docs/results.md from 2026-11-29 22:11 on), and two processes taking turns on one CPU saw their iterations swing
by tens of percent apart from each other (docs/methodology.md §13, "The shared cache"): memory-heavy work feels
what the other tenants do in the last-level cache, and lock-step cancels only the part two turns share.

A reading chases pointers in three buffers, one process each, one after the other: half a core's own cache
(its level 2), a quarter of the shared one (level 3), and twice the shared one (memory). Where the middle
one's load lies between the other two says how much of the shared cache is left to us: near the first, all of
it; near the last, none. It needs no calibration: the three are read within seconds on the same machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bridgebench import native
from bridgebench.digits import significant
from bridgebench.environment import Advice
from bridgebench.reference import FLAGS, loop_times
from bridgebench.study import PROBES_DIR

SOURCE = PROBES_DIR / "c" / "chase.c"
LOADS = 50_000  # dependent loads an iteration: about 0.3 ms from a core's cache, 10 ms from memory, here
ITERATIONS = 8  # a reading then takes 0.33–0.46 s here (evidence/shared_cache_watch.py), most of it in memory
SKIPPED = 2  # the chase's first lap is untimed, but the first iterations still find the buffer partly elsewhere
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
# Where sysfs does not say: this project's VM (1 MiB of level 2 a core, 32 MiB of level 3 shared).
DEFAULT_LEVEL2, DEFAULT_LEVEL3 = 1 << 20, 32 << 20
HELD_LOW = 0.5  # below: most of the shared cache is someone else's (where a load lies on the reading's own scale)


@dataclass(frozen=True)
class Sizes:
    """The three buffers, in bytes."""

    own: int  # half a core's own level-2 cache
    shared: int  # a quarter of the level-3 cache the cores share
    memory: int  # twice the level-3 cache


def sizes(caches: Path = CACHES) -> Sizes:
    """The buffers for this machine's caches as sysfs gives them (this VM's where it does not)."""
    found = {}
    for index in sorted(caches.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind in ("Unified", "Data") and size.endswith("K") and size[:-1].isdigit():
            found[level] = int(size[:-1]) * 1024
    level2, level3 = found.get(2, DEFAULT_LEVEL2), found.get(3, DEFAULT_LEVEL3)
    return Sizes(level2 // 2, level3 // 4, level3 * 2)


@dataclass(frozen=True)
class CacheReading:
    """A load's median latency in each buffer, in seconds (None where that chase failed, with the reason), and
    the interquartile range of the shared buffer's iterations over their median."""

    sizes: Sizes
    own_s: float | None
    shared_s: float | None
    memory_s: float | None
    spread: float | None = None
    detail: str = ""

    @property
    def held(self) -> float | None:
        """Where a load in the shared buffer lies between one in a core's own cache (1) and one in memory (0),
        clipped to that range: the share of the shared cache left to us, roughly (it takes latency as linear in
        the share of loads that hit)."""
        if self.own_s is None or self.shared_s is None or self.memory_s is None or self.memory_s <= self.own_s:
            return None
        return min(1.0, max(0.0, (self.memory_s - self.shared_s) / (self.memory_s - self.own_s)))


def binary() -> Path:
    return native.compiled(SOURCE, FLAGS)


def read(cpu: int | None, buffers: Sizes | None = None, iterations: int = ITERATIONS) -> CacheReading:
    """Chase each buffer once, pinned to `cpu`, own first."""
    buffers = buffers or sizes()
    try:
        program = binary()
    except OSError as e:
        return CacheReading(buffers, None, None, None, None, f"cannot build {SOURCE.name}: {str(e)[:200]}")
    latencies: list[float | None] = []
    spread, details = None, []
    for k, size in enumerate((buffers.own, buffers.shared, buffers.memory)):
        times, detail = loop_times(program, (str(iterations), str(size), str(LOADS)), iterations, cpu)
        if times is None:
            latencies.append(None)
            details.append(detail)
            continue
        per_load = times[SKIPPED:] / LOADS
        median = float(np.median(per_load))
        latencies.append(median)
        if k == 1:  # the shared buffer (by place: on a small machine two sizes can be equal)
            q1, q3 = np.percentile(per_load, [25, 75])
            spread = float((q3 - q1) / median)
    own, shared, memory = latencies
    return CacheReading(buffers, own, shared, memory, spread, "; ".join(details))


def _ns(seconds: float | None) -> str:
    return "—" if seconds is None else f"{significant(seconds * 1e9, 2)} ns"


def _mib(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def advice(reading: CacheReading) -> Advice:
    """`doctor`'s finding: how much of the shared cache is left to us now."""
    topic = "shared cache now (pointer chase)"
    held = reading.held
    b = reading.sizes
    loads = (f"a load {_ns(reading.own_s)} in {_mib(b.own)}, {_ns(reading.shared_s)} in {_mib(b.shared)}"
             + (f" (interquartile range {significant(reading.spread * 100, 2)} %)" if reading.spread is not None
                else "") + f", {_ns(reading.memory_s)} in {_mib(b.memory)}")
    if held is None:
        return Advice(topic, loads, False, "not read: " + (reading.detail or "the chase in memory was no slower "
                                                                           "than in a core's own cache"))
    state = f"{loads}: {held:.0%} of the way from memory to a core's own cache"
    if held >= HELD_LOW:
        return Advice(topic, state, True, "")
    return Advice(topic, state, False, "most of the cache the cores share is not ours now (the host's other "
                  "tenants', most likely: a quarter of it answers nearly as slowly as memory): work "
                  "that reaches beyond a core's own cache (most benchmarks that allocate) runs slower than usual "
                  "and swings from one iteration to the next; taking turns in lock-step cancels only what two "
                  "neighbouring turns share, so ratios need more blocks (methodology §13, \"The shared cache\")")
