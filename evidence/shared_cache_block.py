"""Whether a benchmark's turns follow the shared cache, turn by turn: a lock-step block (bridgebench/timing/lockstep.py)
of three processes on one CPU taking turns one iteration each, in an order drawn afresh every round: the pointer
chase over a quarter of the shared cache (probes/c/chase.c, as `doctor` reads it), the reference loop
(probes/c/constant.c, a core's own cache) and a probe of the project's. A round's three iterations are a few
hundred milliseconds apart at most, so where the cache left to us moves by the second they meet the same state.

    .venv/bin/python evidence/shared_cache_block.py [--rounds N] [--blocks B] [--cpu C] -- PROBE COMMAND …

The probe command must speak the stepped mode and make N iterations (the Lua probe: `lua5.1 probes/lua/probe.lua
BENCHMARK N PARAM`, with its LUA_CPATH in the environment). Per block: Spearman's rank correlation over rounds of
the probe's iteration with the chase's and with the reference loop's, and each one's range. Run it with nothing
else of ours running: every figure is a timing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from bridgebench import reference, shared_cache
from bridgebench.runner import OK
from bridgebench.timing import lockstep

SKIPPED = 2  # rounds left out at the start: the probe's warm-up, the chase's first laps


def spread(times: np.ndarray) -> str:
    return f"{np.min(times) * 1e3:.3g}–{np.max(times) * 1e3:.3g} ms (median {np.median(times) * 1e3:.3g})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("probe", nargs="+", help="after --: the probe command, making --rounds iterations")
    args = ap.parse_args()
    if args.rounds <= SKIPPED + 4 or args.blocks < 1:
        print(f"shared_cache_block.py: --rounds must be above {SKIPPED + 4}, --blocks at least 1", file=sys.stderr)
        return 2
    size = shared_cache.sizes().shared
    env = dict(os.environ)
    members = [lockstep.Member([str(shared_cache.binary()), str(args.rounds), str(size), str(shared_cache.LOADS)],
                               env, Path.cwd(), args.rounds),
               lockstep.Member([str(reference.binary()), str(args.rounds), str(reference.PASSES)], env, Path.cwd(),
                               args.rounds),
               lockstep.Member(args.probe, env, Path.cwd(), args.rounds)]
    print(f"| block | chase over {size >> 20} MiB, a load | reference loop | probe | probe vs chase (rho, p) | "
          f"probe vs reference loop (rho, p) |")
    print("|---|---|---|---|---|---|")
    for block in range(args.blocks):
        runs = lockstep.run_block(members, timeout_s=120, seed=("shared-cache", block), cpu=args.cpu)
        if any(r.status != OK or r.output is None for r in runs):
            print(f"block {block + 1}: " + "; ".join(f"{r.status}: {r.detail}" for r in runs), file=sys.stderr)
            return 1
        chase, loop, probe = (np.asarray(r.output.times[SKIPPED:], dtype=float) for r in runs if r.output)
        with_chase = stats.spearmanr(chase, probe)
        with_loop = stats.spearmanr(loop, probe)
        print(f"| {block + 1} | {np.min(chase) / shared_cache.LOADS * 1e9:.3g}–"
              f"{np.max(chase) / shared_cache.LOADS * 1e9:.3g} ns | {spread(loop)} | {spread(probe)} | "
              f"{with_chase.statistic:.2f}, {with_chase.pvalue:.2g} | {with_loop.statistic:.2f}, "
              f"{with_loop.pvalue:.2g} |", flush=True)
    print(f"\n{args.rounds - SKIPPED} rounds a block; each round's three iterations in an order drawn afresh, on CPU "
          f"{args.cpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
