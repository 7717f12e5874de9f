"""Does the machine-speed reference follow a workload's speed? Alternates a reading of the reference loop
(bridgebench/reference.py, as a campaign takes it) and one run of a probe command, both pinned to one CPU,
for some rounds, and prints each round's two medians, then their ranges and their rank correlation. A
reading of the machine, not a test; run it with nothing else running.

    .venv/bin/python evidence/reference_tracking.py --rounds 15 -- \\
        env LUA_CPATH="$B/?.so" LUA_PATH= lua5.1 probes/lua/probe.lua studies/lua-vms/benchmarks/fannkuch.lua 3 9

With at least ADJACENT iterations a run, each round also says how the probe's iterations move from one to the
next: the spread of their logs, the spread of the log ratio of adjacent iterations (what a lock-step pair of
twins taking one-iteration turns is left with, where the machine is the only noise: turns cancel a speed that
holds from one iteration to the next, not one that changes within it) and the lag-1 correlation of the logs
(near 1: slow swings that turns cancel; near 0: noise at the iteration's own scale, which only more rounds
average out).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess

import numpy as np
from scipy import stats

from bridgebench import reference
from bridgebench.affinity import spawning_on
from bridgebench.report import fmt
from bridgebench.timing.lockstep import lock_cpu

ADJACENT = 10  # iterations a run needs before its lag-1 correlation says anything



def probe_times(command: list[str], cpu: int | None) -> list[float]:
    """The iteration times of one run of a probe command (those of its last stdout line)."""
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
    return json.loads(out.strip().splitlines()[-1])["times"]


def adjacent(times: list[float]) -> tuple[float, float, float] | None:
    """The sd of the iterations' logs, the sd of adjacent iterations' log ratios, and the logs' lag-1
    correlation; None for a run too short to say."""
    if len(times) < ADJACENT:
        return None
    logs = np.log(np.asarray(times, dtype=np.float64))
    steps = np.diff(logs)
    return float(logs.std(ddof=1)), float(steps.std(ddof=1)), float(np.corrcoef(logs[:-1], logs[1:])[0, 1])


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("command", nargs="+", help="the probe command, after --")
    args = ap.parse_args()
    cpu = lock_cpu()
    loops, probes, moves = [], [], []
    print("| round | reference loop | probe | probe's iterations: sd | adjacent ones' log ratio: sd | lag-1 "
          "correlation |\n|---|---|---|---|---|---|")
    for n in range(1, args.rounds + 1):
        reading = reference.read("tracking", cpu)
        if reading.iteration_s is None:
            raise SystemExit(f"the reference loop was not read: {reading.detail}")
        loops.append(reading.iteration_s)
        times = probe_times(args.command, cpu)
        probes.append(statistics.median(times))
        move = adjacent(times)
        cells = ("—", "—", "—") if move is None else (_pct(move[0]), _pct(move[1]), f"{move[2]:.2f}")
        if move is not None:
            moves.append(move)
        print(f"| {n} | {fmt.duration(loops[-1])} | {fmt.duration(probes[-1])} | {' | '.join(cells)} |")
    rho = stats.spearmanr(loops, probes).statistic if len(loops) > 2 else float("nan")
    print(f"\nreference loop {fmt.duration(min(loops))}–{fmt.duration(max(loops))} "
          f"(×{max(loops) / min(loops):.2f}); probe {fmt.duration(min(probes))}–{fmt.duration(max(probes))} "
          f"(×{max(probes) / min(probes):.2f}); Spearman's rank correlation {rho:.2f} over {len(loops)} rounds "
          f"(CPU {cpu})")
    if moves:
        sd, step, lag = (statistics.median(m[k] for m in moves) for k in range(3))
        print(f"the probe's iterations, medians over {len(moves)} rounds: sd {_pct(sd)}, adjacent ones' log ratio sd "
              f"{_pct(step)}, lag-1 correlation {lag:.2f}")


if __name__ == "__main__":
    main()
