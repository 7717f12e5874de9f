"""Lock-step blocks against one process execution after another, on a real study (issue #40, point 4): the
same campaign run twice from this checkout, `--pairing lockstep` then `--pairing sequential` (each with its
own store, one after the other), and each ratio to the baseline printed from both, with whether the two
agree (the same verdict and overlapping intervals) and how many threads and processes the mechanism had in
its blocks (pinned to one CPU, a multi-threaded mechanism's threads take turns there; alone they spread
over every CPU).

    .venv/bin/python evidence/pairings.py OUT STUDY [--benchmarks a,b] [--mechanisms x,y] [-p 6]
                                              [--budget default] [-- RUN OPTIONS…]

OUT is an empty folder for the two stores and their reports. A benchmark of the harness, not a test: its
figures go to docs/methodology.md §13.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from layout_paths import ratios, verdict  # this folder's: a script's own folder is first on its path

REPO = Path(__file__).resolve().parents[1]


def campaign(out: Path, study: str, pairing: str, args: argparse.Namespace) -> dict:
    """One campaign with the given pairing: its report as JSON."""
    folder = out / pairing
    folder.mkdir(parents=True, exist_ok=True)
    chosen = [flag for name in ("benchmarks", "mechanisms") if getattr(args, name)
              for flag in (f"--{name}", getattr(args, name))]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bridgebench.cli", "run", study, "--budget", args.budget, "-p",
                           str(args.p), *chosen, "--pairing", pairing, "--store", str(folder / "s.sqlite"),
                           "--report-dir", str(folder), "--json", *args.extra],
                          cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 4):  # 4: some executions failed, recorded; the ratios are still there
        sys.exit(f"the {pairing} campaign failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    print(f"{pairing}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return json.loads(done.stdout)


def tree(report: dict) -> dict[str, tuple[int, int]]:
    """Per mechanism, the most threads and processes one of its executions had in a block."""
    most: dict[str, tuple[int, int]] = {}
    for c in report["cells"]:
        for run in c["per_execution"]:
            if run.get("block"):
                t, p = most.get(c["mechanism"], (1, 1))
                most[c["mechanism"]] = (max(t, run.get("threads", 1)), max(p, run.get("processes", 1)))
    return most


def shown(r: dict, margin: float) -> str:
    interval = f" ({r['low']:.3f}–{r['high']:.3f})" if r["low"] is not None else ""
    return f"{verdict(r, margin)} ×{r['value']:.3f}{interval}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="an empty folder for the two campaigns' stores and reports")
    ap.add_argument("study")
    ap.add_argument("--benchmarks", default="")
    ap.add_argument("--mechanisms", default="")
    ap.add_argument("-p", type=int, default=6, help="process executions (blocks) a cell")
    ap.add_argument("--budget", default="default", help="the study's budget (a fixed one: no adaptive rounds)")
    ap.add_argument("extra", nargs="*", help="more options for `run`, after --")
    args = ap.parse_args()
    out = args.out.resolve()
    lockstep, sequential = (campaign(out, args.study, pairing, args) for pairing in ("lockstep", "sequential"))
    margin = lockstep["equivalence"]
    paired, alone = ratios(lockstep), ratios(sequential)
    threads = tree(lockstep)
    print("| benchmark | mechanism | threads / processes in a block | lock-step | sequential | agree |")
    print("|---|---|---|---|---|---|")
    agreed = 0
    keys = sorted(paired.keys() & alone.keys())
    for key in keys:
        a, b = paired[key], alone[key]
        overlap = a["low"] is not None and b["low"] is not None and a["low"] <= b["high"] and b["low"] <= a["high"]
        same = verdict(a, margin) == verdict(b, margin)
        agreed += same and overlap
        t, p = threads.get(key[1], (1, 1))
        print(f"| {key[0]} | {key[1]} | {t} / {p} | {shown(a, margin)} | {shown(b, margin)} | "
              f"{'yes' if same and overlap else 'no'} |")
    print(f"\n{agreed} of {len(keys)} ratios agree (same verdict, overlapping intervals); margin ±{margin:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
