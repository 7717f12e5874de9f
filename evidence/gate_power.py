"""How often the CI gate (`diff --fail-on slower`, docs/ci.md) fails on a planted regression and on A/A
(issue #43's goals): N campaigns of the self-test's planted loop, each with A, A again and A with more work,
then per campaign `diff 1:a 1:a-plus… --fail-on slower` (should exit 7) and `diff 1:a 1:a-again --fail-on
slower` (should exit 0), and whether A/A claimed a difference the gate does not look for (`--fail-on
faster,different`), so that the A/A count is of every claim, not only of slower ones.

    .venv/bin/python evidence/gate_power.py OUT --metric instructions [-n 50]   # +0.5 %, counted, 3 executions
    .venv/bin/python evidence/gate_power.py OUT --metric seconds [-n 50]        # +2 %, timed, 5 lock-step blocks

OUT is an empty folder for the store. Prints the counts with 99 % Clopper-Pearson intervals. A benchmark of the
gate, not a test: its figures go to docs/ci.md and docs/results.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from scipy import stats

SETUPS = {  # metric: (the planted mechanism, its budget options)
    "instructions": ("a-plus05", ["--budget", "instructions", "-p", "3"]),
    "seconds": ("a-plus2", ["-p", "5"]),
}


def bridgebench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bridgebench.cli", *args], capture_output=True, text=True)


def interval(k: int, n: int) -> str:
    low = stats.beta.ppf(0.005, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(0.995, k + 1, n - k) if k < n else 1.0
    return f"{k} of {n} ({low:.0%}–{high:.0%})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--metric", choices=sorted(SETUPS), default="instructions")
    ap.add_argument("-n", type=int, default=50, help="campaigns")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = str(args.out / f"gate-{args.metric}.sqlite")
    planted, budget = SETUPS[args.metric]
    caught = passed = silent = 0
    started = time.monotonic()
    for i in range(args.n):
        ran = bridgebench("run", "selftest", *budget, "--mechanisms", f"a,a-again,{planted}", "--benchmarks",
                          "steady", "--store", store, "--report-dir", str(args.out), "--json")
        if ran.returncode != 0:
            sys.exit(f"campaign {i + 1} failed ({ran.returncode}): {ran.stderr.strip()[-300:]}")
        cid = str(i + 1)
        regression = bridgebench("diff", f"{cid}:a", f"{cid}:{planted}", "--fail-on", "slower", "--store", store)
        same = bridgebench("diff", f"{cid}:a", f"{cid}:a-again", "--fail-on", "slower", "--store", store)
        other = bridgebench("diff", f"{cid}:a", f"{cid}:a-again", "--fail-on", "faster,different", "--store", store)
        if {regression.returncode, same.returncode, other.returncode} - {0, 7}:
            sys.exit(f"a diff failed: {regression.stderr.strip()[-200:]} {same.stderr.strip()[-200:]}")
        caught += regression.returncode == 7
        passed += same.returncode == 0
        silent += same.returncode == 0 and other.returncode == 0
        claims = "" if other.returncode == 0 else " and claims it faster or different"
        print(f"{i + 1}: planted {'fails' if regression.returncode == 7 else 'PASSES'} the gate, A/A "
              f"{'passes' if same.returncode == 0 else 'FAILS'}{claims}", file=sys.stderr, flush=True)
    print("| metric | planted | campaigns | gate failed on the planted change | A/A passed | A/A: no difference "
          "claimed | wall |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.metric} | {planted} | {args.n} | {interval(caught, args.n)} | {interval(passed, args.n)} | "
          f"{interval(silent, args.n)} | {time.monotonic() - started:.0f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
