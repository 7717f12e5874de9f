"""How wide a campaign's ratios to its baseline are, per mechanism: from its JSON report (`bridgebench report
N --format json`, or the .json a run writes). For each mechanism, how many ratios have an interval, the median
and largest half-width (half the interval's log width, as a share), how many lie within ±5 %, and the range of
process executions (or lock-step blocks) they rest on, with their median (and below the table, how many ratios
rest on each count), and for lock-step ratios the medians of the spread within blocks and between them (the
report's ratio_within_sd and ratio_between_sd), and what a round lasted (ratio_round_s: each benchmark's
median over the pool, the shortest and the longest of those); last, how many executions the disturbance audit
flagged, and the most steal it saw, and the range of the machine's speed readings (the reference loop's
iteration at each campaign's start and end: bridgebench/reference.py). Several reports (campaigns of one budget) are
read as one pool; --benchmarks reads only those benchmarks' ratios. With --means, for repeated campaigns of one
question (an A/A, a planted difference): each mechanism and benchmark's estimates over the reports, their geometric
mean and its standard error, so a bias shows apart from the intervals' chance misses. With --versus, a second pool
of reports (campaigns of the same study taken another way: `--turns twins` against separate turns, which `diff` will
not set against each other, their clocks differing): per mechanism, the second pool's estimates over the first's,
benchmark by benchmark (each pool's geometric mean), their geometric mean over the benchmarks with its standard
error, and on how many the second is lower. With --by-report, every estimate side by side: per mechanism, a row for
each benchmark and a column for each report (named by its folder).
A reading of reports, not a test.

    .venv/bin/python evidence/ratio_widths.py results/lua-vms-1.json [more.json ...] [--within 0.05] [--means]
    .venv/bin/python evidence/ratio_widths.py reports/*.json --benchmarks nbody
    .venv/bin/python evidence/ratio_widths.py separate-1.json separate-2.json --versus twins-1.json twins-2.json
    .venv/bin/python evidence/ratio_widths.py rep-a/lua-vms-1.json rep-b/lua-vms-1.json --by-report
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics
from pathlib import Path

from bridgebench.report import fmt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, nargs="+")
    ap.add_argument("--within", type=float, default=0.05)
    ap.add_argument("--means", action="store_true", help="the estimates' geometric mean over the reports, per "
                    "mechanism and benchmark, with its standard error")
    ap.add_argument("--versus", type=Path, nargs="+", metavar="REPORT", help="a second pool: its estimates over "
                    "the first pool's, per mechanism")
    ap.add_argument("--benchmarks", default=None, help="comma-separated: read only these benchmarks' ratios")
    ap.add_argument("--by-report", action="store_true", help="every estimate, a column for each report")
    args = ap.parse_args()
    only = set(args.benchmarks.split(",")) if args.benchmarks else None
    if args.by_report:
        _by_report(args.report, only)
        return
    by_mechanism, audits, readings = _pool(args.report, only)
    if args.versus:
        _versus(by_mechanism, _pool(args.versus, only)[0])
        return
    print(f"| mechanism | ratios with an interval | median half-width | largest | within ±{args.within:.0%} "
          "| executions or blocks (median) | sd within / between blocks (medians) | a round (benchmarks' medians) |"
          "\n|---|---|---|---|---|---|---|---|")
    for mechanism, cells in by_mechanism.items():
        ratios = [c["ratio"] for c in cells]
        widths = [math.expm1((math.log(r["high"]) - math.log(r["low"])) / 2) for r in ratios if r["low"]]
        counts = [r["executions"] for r in ratios]
        spread = " / ".join(_median_share([c.get(k) for c in cells]) for k in ("ratio_within_sd", "ratio_between_sd"))
        print(f"| {mechanism} | {len(widths)} of {len(ratios)} | "
              f"{statistics.median(widths):.1%} | {max(widths):.1%} | {sum(w <= args.within for w in widths)} | "
              f"{min(counts)}–{max(counts)} ({statistics.median(counts):g}) | {spread} | {_rounds(cells)} |" if widths
              else f"| {mechanism} | 0 of {len(ratios)} | — | — | 0 | — | — | — |")
    for mechanism, cells in by_mechanism.items():  # a ratio on fewer than the plan's blocks: some were dropped
        rests = collections.Counter(c["ratio"]["executions"] for c in cells)
        print(f"\n{mechanism}'s ratios by the executions or blocks they rest on: "
              + ", ".join(f"{n} ×{k}" for n, k in sorted(rests.items(), reverse=True)))
    flagged, audited = sum(a["disturbed"] for a in audits), sum(a["audited"] for a in audits)
    steal = max((a["steal_cores_max"] or 0.0 for a in audits if a["audited"]), default=0.0)
    print(f"\nthe audit flagged {flagged} of {audited} executions in {len(audits)} report(s); steal up to "
          f"{steal:.2f} cores")
    print(f"the reference loop: {fmt.duration(min(readings))}–{fmt.duration(max(readings))} an iteration in "
          f"{len(readings)} readings" if readings else "the reference loop: no readings (campaigns stored before them)")
    if args.means:
        _means(by_mechanism)


def _pool(paths: list[Path], only: set[str] | None = None) -> tuple[dict[str, list[dict]], list[dict], list[float]]:
    """The reports' ratio cells by mechanism (the baseline's own left out; with `only`, those benchmarks' alone),
    their audits, and the speed readings."""
    by_mechanism: dict[str, list[dict]] = {}
    audits, readings = [], []
    for path in paths:
        report = json.loads(path.read_text())
        audits.append(report["audit"])
        readings += [r["iteration_s"] for r in report["campaign"].get("speed", []) if r["iteration_s"]]
        for cell in report["cells"]:
            wanted = only is None or cell["benchmark"] in only
            if cell["ratio"] and cell["mechanism"] != report["baseline"] and wanted:
                by_mechanism.setdefault(cell["mechanism"], []).append(cell)
    return by_mechanism, audits, readings


def _log_estimates(cells: list[dict]) -> dict[str, list[float]]:
    """Each benchmark's log estimates over the cells."""
    by_benchmark: dict[str, list[float]] = {}
    for c in cells:
        by_benchmark.setdefault(c["benchmark"], []).append(math.log(c["ratio"]["value"]))
    return by_benchmark


def _mean_se(logs: list[float]) -> tuple[float, float]:
    """The mean of the logs and its standard error (nan from one)."""
    return statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else float("nan")


def _versus(first: dict[str, list[dict]], second: dict[str, list[dict]]) -> None:
    """Per mechanism, the second pool's estimates over the first's: geometric mean over the benchmarks both have."""
    print("| mechanism | benchmarks | second pool over first: geometric mean | standard error | second lower on |"
          "\n|---|---|---|---|---|")
    for mechanism in sorted(first.keys() & second.keys()):
        a, b = _log_estimates(first[mechanism]), _log_estimates(second[mechanism])
        logs = [statistics.mean(b[k]) - statistics.mean(a[k]) for k in a.keys() & b.keys()]
        mean, se = _mean_se(logs)
        print(f"| {mechanism} | {len(logs)} | ×{math.exp(mean):.4f} | {se:.2%} | {sum(x < 0 for x in logs)} |")


def _means(by_mechanism: dict[str, list[dict]]) -> None:
    """Each mechanism and benchmark's estimates over the reports: their geometric mean and its standard error."""
    print("\n| mechanism | benchmark | reports | geometric mean of the estimates | standard error |"
          "\n|---|---|---|---|---|")
    for mechanism, cells in by_mechanism.items():
        for benchmark, logs in _log_estimates(cells).items():
            mean, se = _mean_se(logs)
            print(f"| {mechanism} | {benchmark} | {len(logs)} | ×{math.exp(mean):.5f} | {se:.3%} |")


def _by_report(paths: list[Path], only: set[str] | None) -> None:
    """Per mechanism, each benchmark's estimate in each report, side by side (a report named by its folder)."""
    pools = [_pool([path], only)[0] for path in paths]
    names = [path.parent.name or path.stem for path in paths]
    for mechanism in sorted({m for pool in pools for m in pool}):
        print(f"\n{mechanism}\n\n| benchmark | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
        estimates = [{c["benchmark"]: c["ratio"]["value"] for c in pool.get(mechanism, [])} for pool in pools]
        for benchmark in sorted({b for e in estimates for b in e}):
            print(f"| {benchmark} | " + " | ".join(f"×{e[benchmark]:.3f}" if benchmark in e else "—" for e in estimates)
                  + " |")


def _rounds(cells: list[dict]) -> str:
    """The shortest and the longest of the benchmarks' median rounds, each named."""
    by_benchmark: dict[str, list[float]] = {}
    for c in cells:
        if c.get("ratio_round_s") is not None:
            by_benchmark.setdefault(c["benchmark"], []).append(c["ratio_round_s"])
    if not by_benchmark:
        return "—"
    medians = sorted((statistics.median(v), b) for b, v in by_benchmark.items())
    (low, low_b), (high, high_b) = medians[0], medians[-1]
    return f"{low_b} {fmt.duration(low)} – {high_b} {fmt.duration(high)}"


def _median_share(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):.1%}" if known else "—"


if __name__ == "__main__":
    main()
