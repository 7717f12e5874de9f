"""Does the answer depend on where the repository was cloned? (issue #40, point 6.) Clones this checkout's
HEAD twice, into a folder with a short path and one with a long path, and runs the same lua-vms campaign
from each clone (its own code, studies, probes and build folder), one after the other; then prints each
ratio with its interval from both, and whether the two agree.

    .venv/bin/python evidence/layout_paths.py OUT [--benchmarks richards,md5] [-- RUN OPTIONS…]
    .venv/bin/python evidence/layout_paths.py OUT --default      # the README's `run lua-vms`, from each

The folder's path sets the lengths of LUA_CPATH, LUA_PATH, LD_LIBRARY_PATH and the binary's path, and so
where a benchmark's bytecode lands; LuaJIT's hot counters are indexed by bytecode address. With a layout
drawn per execution (the default) the intervals are over layouts and should agree; `-- --layout fixed
--pairing sequential` runs the campaign as it ran before lock-step blocks and drawn layouts. `--default` runs
the default campaign instead (every benchmark and mechanism, its adaptive budget; about 8½ minutes each).
Two ratios *agree* when their verdicts are the same and their intervals overlap; they *contradict* when
their intervals do not overlap (as faster beside slower never do); otherwise (one decided, the other
undecided, or equivalent beside faster or slower, intervals overlapping) they are *compatible*. A
benchmark of the harness, not a test: its figures go to docs/methodology.md §13.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bridgebench.question import answer
from bridgebench.stats import Estimate

REPO = Path(__file__).resolve().parents[1]
LONG = "a-folder-whose-absolute-path-is-long-enough-to-move-the-environment-and-the-heap"


def campaign(clone: Path, options: list[str]) -> dict:
    """One campaign from the clone, with its own code: its report as JSON."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bridgebench.cli", "run", "lua-vms", *options,
                           "--store", str(clone / "results" / "s.sqlite"), "--json"],
                          cwd=clone, capture_output=True, text=True,
                          env=os.environ | {"PYTHONPATH": str(clone)})
    if done.returncode != 0:
        sys.exit(f"the campaign in {clone} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    print(f"{clone}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return json.loads(done.stdout)


def ratios(report: dict) -> dict[tuple[str, str], dict]:
    return {(c["benchmark"], c["mechanism"]): c["ratio"] for c in report["cells"]
            if c["ratio"] and c["mechanism"] != report["baseline"]}


def verdict(r: dict, margin: float) -> str:
    """The headline's word for a ratio as the report stored it (question.answer: one rule everywhere)."""
    ratio = Estimate(r["value"], r["low"], r["high"], r["confidence"], r["method"], r["executions"])
    return answer(ratio, margin).state


AGREE, COMPATIBLE, CONTRADICT = "agree", "compatible", "contradict"


def agreement(a: dict, b: dict, margin: float) -> str:
    """Whether two runs' ratios say the same (AGREE), could both be right (COMPATIBLE: one undecided, or
    equivalent beside faster or slower, intervals overlapping) or cannot (CONTRADICT: intervals apart, which
    faster beside slower always are)."""
    if a["low"] is not None and b["low"] is not None and (a["low"] > b["high"] or b["low"] > a["high"]):
        return CONTRADICT
    return AGREE if verdict(a, margin) == verdict(b, margin) else COMPATIBLE


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="an empty folder for the two clones")
    ap.add_argument("--benchmarks", default="richards,md5")
    ap.add_argument("--mechanisms", default="luajit,luajit2")
    ap.add_argument("-p", type=int, default=8, help="process executions (blocks) a cell")
    ap.add_argument("--default", action="store_true", help="the default campaign: `run lua-vms` as it stands")
    ap.add_argument("extra", nargs="*", help="more options for `run`, after --")
    args = ap.parse_args()
    out = args.out.resolve()
    folders = [out / "s", out / LONG / LONG[:40] / "repo"]
    reports = []
    for folder in folders:
        folder.parent.mkdir(parents=True, exist_ok=True)
        if not folder.exists():
            subprocess.run(["git", "clone", "-q", str(REPO), str(folder)], check=True)
        options = (args.extra if args.default else
                   ["--budget", "fixed", "-p", str(args.p), "--benchmarks", args.benchmarks, "--mechanisms",
                    args.mechanisms, "--random-order", *args.extra])
        reports.append(campaign(folder, options))
    short, long = (ratios(r) for r in reports)
    margin = reports[0]["equivalence"]
    print(f"| benchmark | mechanism | short path ({len(str(folders[0]))} chars) | long path "
          f"({len(str(folders[1]))} chars) | agree |")
    print("|---|---|---|---|---|")
    tally: Counter[str] = Counter()
    options = reports[0]["campaign"]["options"]
    for key in sorted(short.keys() & long.keys()):
        a, b = short[key], long[key]
        said = agreement(a, b, margin)
        tally[said] += 1
        shown = [f"{verdict(r, margin)} ×{r['value']:.3f}" + (f" ({r['low']:.3f}–{r['high']:.3f})" if r["low"] else "")
                 for r in (a, b)]
        print(f"| {key[0]} | {key[1]} | {shown[0]} | {shown[1]} | {said} |")
    print(f"\nof {sum(tally.values())} ratios: {tally[AGREE]} agree (same verdict, overlapping intervals), "
          f"{tally[COMPATIBLE]} compatible, {tally[CONTRADICT]} contradict; pairing {options.get('pairing')}, "
          f"layout {options.get('layout')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
