"""How far this machine shifts a constant program's speed by itself: the smallest segment shift that the
warm-up classification can attribute to a program rather than to the machine (issue #9), measured, not a test.

    .venv/bin/python evidence/drift.py [--executions 200] [--iterations 120] [--work 2000000] [--busy] [--json]

It builds the self-test's planted benchmark (probes/c/planted.c) into a temporary folder and runs it with no
planted phase, as fresh process executions one after another: the truth is *flat*. Each execution's
iterations are classified as bridgebench classifies them, under a range of relative δ (the shift under which
two segments count as the same performance, docs/methodology.md §3), and for each δ the script prints the
share classified flat and the classes of the rest; beside them, the largest segment shift per execution at
δ = 0, and the mean profile: each tenth of the iterations' mean time over the execution's second-half median,
averaged over the executions (a machine that starts a process slow shows it in the first tenths).
`--busy` runs a CPU-bound process of ours beside every execution. Nothing else is started; say what else
ran on the machine when you quote a figure.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bridgebench.stats.classify import FLAT, classify_execution

REPO = Path(__file__).resolve().parents[1]

DELTAS = (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10)


def build(folder: Path) -> Path:
    binary = folder / "planted"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", str(binary), str(REPO / "probes" / "c" / "planted.c")],
                   check=True)
    return binary


def one_execution(binary: Path, iterations: int, work: int) -> np.ndarray:
    done = subprocess.run([str(binary), str(iterations), str(work)], capture_output=True, text=True, check=True)
    return np.asarray(json.loads(done.stdout)["times"], dtype=float)


def largest_shift(times: np.ndarray) -> float:
    """The largest difference between a segment's mean and the last segment's, over the fastest segment's
    mean, at the strictest δ (0): what δ would have to tolerate for this execution to be flat."""
    segments = classify_execution(times, delta_relative=0.0).segments
    fastest = min(s.mean for s in segments)
    return max(abs(s.mean - segments[-1].mean) for s in segments) / fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=120)
    parser.add_argument("--work", type=int, default=2_000_000)
    parser.add_argument("--busy", action="store_true", help="a CPU-bound process of ours beside every execution")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            binary = build(Path(tmp))
            series = [one_execution(binary, args.iterations, args.work) for _ in range(args.executions)]
    finally:
        if spinner:
            spinner.send_signal(signal.SIGKILL)
            spinner.wait()
    medians = [float(np.median(s)) for s in series]
    half = args.iterations // 2
    profile = np.mean([[float(np.mean(part)) / float(np.median(s[half:])) for part in np.array_split(s, 10)]
                       for s in series], axis=0)
    shifts = [largest_shift(s) for s in series]
    rows = []
    for delta in DELTAS:
        kinds = collections.Counter(classify_execution(s, delta_relative=delta).kind for s in series)
        rows.append({"delta_relative": delta, "flat": kinds[FLAT], "executions": len(series),
                     "others": {k: v for k, v in kinds.items() if k != FLAT}})
    result = {"executions": len(series), "iterations": args.iterations, "busy": args.busy,
              "iteration_ms_median": 1e3 * float(np.median(medians)),
              "largest_shift_percentiles": {str(p): float(np.percentile(shifts, p)) for p in (50, 90, 95, 99)},
              "profile_by_tenth": [float(x) for x in profile], "by_delta": rows, "load_after": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(result))
        return
    print(f"{len(series)} flat executions × {args.iterations} iterations of {result['iteration_ms_median']:.2f} ms"
          f"{' beside a CPU-bound process' if args.busy else ''}")
    shown = ", ".join(f"P{p} {v:.1%}" for p, v in result["largest_shift_percentiles"].items())
    print(f"largest segment shift per execution (δ = 0): {shown}")
    print("mean profile by tenth of the iterations (÷ the second half's median): "
          + " ".join(f"{x:.3f}" for x in result["profile_by_tenth"]))
    print("| δ (relative) | classified flat | the others |")
    print("|---|---|---|")
    for r in rows:
        others = ", ".join(f"{k} {v}" for k, v in sorted(r["others"].items())) or "—"
        print(f"| {r['delta_relative']:.0%} | {r['flat']}/{r['executions']} ({r['flat'] / r['executions']:.1%}) "
              f"| {others} |")


if __name__ == "__main__":
    main()
