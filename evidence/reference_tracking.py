"""Does the machine-speed reference follow a workload's speed? Alternates a reading of the reference loop
(bridgebench/reference.py, as a campaign takes it) and one run of a probe command, both pinned to one CPU,
for some rounds, and prints each round's two medians, then their ranges and their rank correlation. A
reading of the machine, not a test; run it with nothing else running.

    .venv/bin/python evidence/reference_tracking.py --rounds 15 -- \\
        env LUA_CPATH="$B/?.so" LUA_PATH= lua5.1 probes/lua/probe.lua studies/lua-vms/benchmarks/fannkuch.lua 3 9
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess

from scipy import stats

from bridgebench import reference
from bridgebench.affinity import spawning_on
from bridgebench.report import fmt
from bridgebench.timing.lockstep import lock_cpu


def probe_median(command: list[str], cpu: int | None) -> float:
    """The median iteration of one run of a probe command (the times of its last stdout line)."""
    with spawning_on(cpu):
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()  # a hung probe does not outlive the script
        proc.communicate()
        raise SystemExit(f"{command[0]} did not end within 600 s") from None
    if proc.returncode != 0:
        raise SystemExit(f"{command[0]} exited with {proc.returncode}: {err.strip()[-300:]}")
    return statistics.median(json.loads(out.strip().splitlines()[-1])["times"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("command", nargs="+", help="the probe command, after --")
    args = ap.parse_args()
    cpu = lock_cpu()
    loops, probes = [], []
    print("| round | reference loop | probe |\n|---|---|---|")
    for n in range(1, args.rounds + 1):
        reading = reference.read("tracking", cpu)
        if reading.iteration_s is None:
            raise SystemExit(f"the reference loop was not read: {reading.detail}")
        loops.append(reading.iteration_s)
        probes.append(probe_median(args.command, cpu))
        print(f"| {n} | {fmt.duration(loops[-1])} | {fmt.duration(probes[-1])} |")
    rho = stats.spearmanr(loops, probes).statistic if len(loops) > 2 else float("nan")
    print(f"\nreference loop {fmt.duration(min(loops))}–{fmt.duration(max(loops))} "
          f"(×{max(loops) / min(loops):.2f}); probe {fmt.duration(min(probes))}–{fmt.duration(max(probes))} "
          f"(×{max(probes) / min(probes):.2f}); Spearman's rank correlation {rho:.2f} over {len(loops)} rounds "
          f"(CPU {cpu})")


if __name__ == "__main__":
    main()
