"""The shared cache (bridgebench/shared_cache.py) and the reference loop (bridgebench/reference.py) read again and
again, with a probe of the project's run after each pair of readings: whether the cache left to us moves while the
reference loop holds still, and whether a memory-heavy benchmark moves with the cache.

    .venv/bin/python evidence/shared_cache_watch.py [--readings N] [--every S] [--cpu C] [--iterations I]
        [-- PROBE COMMAND …]

The probe command (a program on PATH, or an absolute path) prints the probe protocol's JSON (bridgebench/1) last,
with I iterations (8 unless given); its median iteration is a column. Run it on a machine with nothing else of ours
running: every figure here is a timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from scipy import stats

from bridgebench import reference, shared_cache


def probe_median(command: list[str], iterations: int, cpu: int) -> float | None:
    """The probe's median iteration in seconds, its first left out as a warm-up (run and read as the reference loop
    is: reference.loop_times), or None, and why on stderr, when it fails."""
    times, detail = reference.loop_times(Path(command[0]), tuple(command[1:]), iterations, cpu)
    if times is None or len(times) < 2:
        print(f"probe: {detail or 'fewer than 2 iterations'}", file=sys.stderr)
        return None
    return float(statistics.median(times[1:]))


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3g} ms"


def ns(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e9:.3g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readings", type=int, default=10)
    ap.add_argument("--every", type=float, default=30.0, help="seconds from one reading's start to the next's")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=8, help="the iterations the probe command makes")
    ap.add_argument("probe", nargs="*", help="after --: a probe command whose median iteration is a column")
    args = ap.parse_args()
    if args.readings < 1 or args.every < 0:
        print("shared_cache_watch.py: --readings must be at least 1 and --every not negative", file=sys.stderr)
        return 2
    buffers = shared_cache.sizes()
    print(f"| UTC | reference loop (IQR) | load ns: {buffers.own >> 10} KiB, {buffers.shared >> 20} MiB (IQR), "
          f"{buffers.memory >> 20} MiB | held | the chase took | probe's median iteration |")
    print("|---|---|---|---|---|---|")
    held, loops, probes = [], [], []
    pairs = []  # (held, probe) where both were read
    for i in range(args.readings):
        start = time.monotonic()
        loop = reference.read("watch", args.cpu)
        chased = time.monotonic()
        cache = shared_cache.read(args.cpu, buffers)
        chased = time.monotonic() - chased  # what a campaign's reading costs it (engine.read_speed)
        probe = probe_median(args.probe, args.iterations, args.cpu) if args.probe else None
        if cache.held is not None:
            held.append(cache.held)
        if loop.iteration_s is not None:
            loops.append(loop.iteration_s)
        if probe is not None:
            probes.append(probe)
            if cache.held is not None:
                pairs.append((cache.held, probe))
        spread = f"{loop.spread:.0%}" if loop.spread is not None else "—"
        cache_spread = f"{cache.spread:.0%}" if cache.spread is not None else "—"
        print(f"| {time.strftime('%H:%M:%S', time.gmtime())} | {ms(loop.iteration_s)} ({spread}) | "
              f"{ns(cache.own_s)}, {ns(cache.shared_s)} ({cache_spread}), {ns(cache.memory_s)} | "
              f"{'—' if cache.held is None else f'{cache.held:.0%}'} | {chased:.2f} s | {ms(probe)} |", flush=True)
        if i + 1 < args.readings:
            time.sleep(max(0.0, args.every - (time.monotonic() - start)))
    if held and loops:
        print(f"\nheld {min(held):.0%}–{max(held):.0%} (median {statistics.median(held):.0%}); reference loop "
              f"{ms(min(loops))}–{ms(max(loops))}" + (f"; probe {ms(min(probes))}–{ms(max(probes))}" if probes else ""))
    if len(pairs) >= 5:  # how the probe's speed ranks against the cache left to us (-1: slower whenever less)
        rho, p = stats.spearmanr([h for h, _ in pairs], [t for _, t in pairs])
        print(f"Spearman's rank correlation of held and the probe's iteration: {rho:.2f} over {len(pairs)} "
              f"readings (p = {p:.2g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
