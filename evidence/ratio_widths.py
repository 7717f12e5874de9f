"""How wide a campaign's ratios to its baseline are, per mechanism: from its JSON report (`bridgebench report N
--format json`, or the .json a run writes). For each mechanism, how many ratios have an interval, the median and
largest half-width (half the interval's log width, as a share), how many lie within ±5 %, and the range of process
executions (or lock-step blocks) they rest on, with their median (and below the table, how many ratios rest on each
count), and for lock-step ratios the medians of the spread within blocks and between them (the report's
ratio_within_sd and ratio_between_sd) and of the share within (ratio_within_share), and what a round lasted
(ratio_round_s: each benchmark's median over the pool, the shortest and the longest of those); last, how many
executions the disturbance audit flagged, and the most steal it saw, and the range of the machine's speed readings
(the reference loop's iteration at each campaign's start and end: bridgebench/reference.py). Several reports
(campaigns of one budget) are read as one pool; --benchmarks reads only those benchmarks' ratios. With --means, for
repeated campaigns of one question (an A/A, a planted difference): each mechanism and benchmark's estimates over the
reports, their geometric mean and its standard error, so a bias shows apart from the intervals' chance misses. With
--versus, a second pool of reports (campaigns of the same study taken another way: `--turns twins` against separate
turns, which `diff` will not set against each other, their clocks differing): per mechanism, the second pool's
estimates over the first's, benchmark by benchmark (each pool's geometric mean), their geometric mean over the
benchmarks with its standard error, and on how many the second is lower; then each benchmark's estimates in both
pools, how many of each pool's intervals hold the other pool's geometric mean, and their difference over its
standard error (do two ways of taking the same ratio agree?); last, which side moved: each cell's time an iteration,
the second pool's over the first's. Its "apart at 99 %" on real runs (docs/methodology.md §13, "The default's
interpreter ratios against processes alone"): two halves of one way's campaigns, or two sequential campaigns, apart
in 1 of 94 (its A/A); with --plant, a difference multiplied onto the second pool's stored estimates, found in 12 of
94 at ×1.02, 42 at ×1.05, 63 at ×1.09 (its power: it sees the 5–9 % it was built for, not 2 %). With --by-report,
every estimate side by side: per mechanism, a row for each benchmark and a column for each report (named by its
folder).
A reading of reports, not a test.

    .venv/bin/python evidence/ratio_widths.py results/lua-vms-1.json [more.json ...] [--within 0.05] [--means]
    .venv/bin/python evidence/ratio_widths.py reports/*.json --benchmarks nbody
    .venv/bin/python evidence/ratio_widths.py separate-1.json separate-2.json --versus twins-1.json twins-2.json
    .venv/bin/python evidence/ratio_widths.py sequential.json --versus default-1.json default-2.json
    .venv/bin/python evidence/ratio_widths.py rep-a/lua-vms-1.json rep-b/lua-vms-1.json --by-report
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import math
import statistics
from pathlib import Path

from bridgebench.report import fmt
from bridgebench.stats.executions import t_quantile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, nargs="+")
    ap.add_argument("--within", type=float, default=0.05)
    ap.add_argument("--means", action="store_true", help="the estimates' geometric mean over the reports, per "
                    "mechanism and benchmark, with its standard error")
    ap.add_argument("--versus", type=Path, nargs="+", metavar="REPORT", help="a second pool: its estimates over "
                    "the first pool's, per mechanism")
    ap.add_argument("--plant", type=float, default=1.0, help="with --versus: the second pool's estimates and "
                    "intervals times this (a difference planted on real spread: how often --versus finds it)")
    ap.add_argument("--benchmarks", default=None, help="comma-separated: read only these benchmarks' ratios")
    ap.add_argument("--by-report", action="store_true", help="every estimate, a column for each report")
    args = ap.parse_args()
    only = set(args.benchmarks.split(",")) if args.benchmarks else None
    if args.by_report:
        _by_report(args.report, only)
        return
    by_mechanism, audits, readings = _pool(args.report, only)
    if args.versus:
        _versus(by_mechanism, _planted(_pool(args.versus, only)[0], args.plant))
        _speeds(_steady(args.report, only), _steady(args.versus, only))
        return
    print(f"| mechanism | ratios with an interval | median half-width | largest | within ±{args.within:.0%} "
          "| executions or blocks (median) | sd within / between blocks (medians) | share within (median) "
          "| a round (benchmarks' medians) |\n|---|---|---|---|---|---|---|---|---|")
    for mechanism, cells in by_mechanism.items():
        ratios = [c["ratio"] for c in cells]
        widths = [math.expm1((math.log(r["high"]) - math.log(r["low"])) / 2) for r in ratios if r["low"]]
        counts = [r["executions"] for r in ratios]
        spread = " / ".join(_median_share([c.get(k) for c in cells]) for k in ("ratio_within_sd", "ratio_between_sd"))
        within = _median_share([c.get("ratio_within_share") for c in cells], digits=0)  # reports since version 20
        print(f"| {mechanism} | {len(widths)} of {len(ratios)} | "
              f"{statistics.median(widths):.1%} | {max(widths):.1%} | {sum(w <= args.within for w in widths)} | "
              f"{min(counts)}–{max(counts)} ({statistics.median(counts):g}) | {spread} | {within} | {_rounds(cells)} |"
              if widths else f"| {mechanism} | 0 of {len(ratios)} | — | — | 0 | — | — | — | — |")
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
        report = _load(path)
        audits.append(report["audit"])
        readings += [r["iteration_s"] for r in report["campaign"].get("speed", []) if r["iteration_s"]]
        for cell in report["cells"]:
            wanted = only is None or cell["benchmark"] in only
            if cell["ratio"] and cell["mechanism"] != report["baseline"] and wanted:
                by_mechanism.setdefault(cell["mechanism"], []).append(cell)
    return by_mechanism, audits, readings


@functools.cache
def _load(path: Path) -> dict:
    """A JSON report, read once however many tables read it."""
    return json.loads(path.read_text())


def _log_estimates(cells: list[dict]) -> dict[str, list[float]]:
    """Each benchmark's log estimates over the cells."""
    return {b: [math.log(r["value"]) for r in ratios] for b, ratios in _by_benchmark(cells).items()}


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
    print("\nBenchmark by benchmark: each pool's geometric mean of its estimates, and how many of each pool's "
          "intervals hold the other pool's geometric mean\n\n| mechanism | benchmark | first pool | second pool "
          "| second over first | first's intervals holding the second's | second's intervals holding the first's "
          "| z (df) | apart at 99 % |\n|---|---|---|---|---|---|---|---|---|")
    held_a, held_b, apart = [0, 0], [0, 0], [0, 0]
    for mechanism in sorted(first.keys() & second.keys()):
        a, b = _by_benchmark(first[mechanism]), _by_benchmark(second[mechanism])
        for benchmark in sorted(a.keys() & b.keys()):
            mean_a, mean_b = _geometric(a[benchmark]), _geometric(b[benchmark])
            hold_a, hold_b = _holding(a[benchmark], mean_b), _holding(b[benchmark], mean_a)
            z = _z(a[benchmark], b[benchmark])
            for total, (k, n) in ((held_a, hold_a), (held_b, hold_b)):
                total[0], total[1] = total[0] + k, total[1] + n
            if z is not None:
                apart[0], apart[1] = apart[0] + z[2], apart[1] + 1
            said = f"{z[0]:+.1f} ({z[1]:.0f}) | {'yes' if z[2] else 'no'}" if z else "— | —"
            print(f"| {mechanism} | {benchmark} | {_estimates(a[benchmark])} | {_estimates(b[benchmark])} "
                  f"| ×{mean_b / mean_a:.3f} | {hold_a[0]} of {hold_a[1]} | {hold_b[0]} of {hold_b[1]} | {said} |")
    print(f"\nIn all: the first pool's intervals hold the second's geometric mean in {held_a[0]} of {held_a[1]}, the "
          f"second's hold the first's in {held_b[0]} of {held_b[1]}; apart at 99 %: {apart[0]} of {apart[1]}.")
    print("\nz: the difference of the two geometric means (logs) over its standard error, each pool's from the spread "
          "of its estimates over its reports, or, from one report, from its interval (Student's t at its confidence "
          "with its executions or blocks less one: approximate for Welch's t); df: Welch's degrees of freedom; apart: "
          "|z| beyond Student's t at 99 % with those.")


def _planted(by_mechanism: dict[str, list[dict]], factor: float) -> dict[str, list[dict]]:
    """Copies of the cells with their ratio's estimate and interval times factor (the loaded reports untouched)."""
    if factor == 1.0:
        return by_mechanism
    return {m: [{**c, "ratio": {**c["ratio"], **{k: c["ratio"][k] * factor for k in ("value", "low", "high")
                                                  if c["ratio"].get(k) is not None}}} for c in cells]
            for m, cells in by_mechanism.items()}


def _steady(paths: list[Path], only: set[str] | None) -> dict[tuple[str, str], list[float]]:
    """Every cell's steady performance (seconds an iteration), the baseline's too, by (mechanism, benchmark)."""
    out: dict[tuple[str, str], list[float]] = {}
    for path in paths:
        for cell in _load(path)["cells"]:
            if (only is None or cell["benchmark"] in only) and cell.get("steady_performance"):
                out.setdefault((cell["mechanism"], cell["benchmark"]), []).append(cell["steady_performance"]["value"])
    return out


def _speeds(first: dict[tuple[str, str], list[float]], second: dict[tuple[str, str], list[float]]) -> None:
    """Which side of a ratio moved: each cell's time an iteration in the second pool over the first's."""
    both = first.keys() & second.keys()
    benchmarks = sorted({b for _, b in both})
    print("\nEach cell's time an iteration (steady performance; each pool's geometric mean), the second pool's over "
          "the first's\n\n| mechanism | " + " | ".join(benchmarks) + " |\n|---|" + "---|" * len(benchmarks))
    for mechanism in sorted({m for m, _ in both}):
        moved = [math.exp(_log_mean(second[k]) - _log_mean(first[k])) if k in both else None
                 for k in ((mechanism, b) for b in benchmarks)]
        print(f"| {mechanism} | " + " | ".join("—" if m is None else f"×{m:.3f}" for m in moved) + " |")


def _log_mean(values: list[float]) -> float:
    return statistics.mean(math.log(v) for v in values)


def _by_benchmark(cells: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for c in cells:
        out.setdefault(c["benchmark"], []).append(c["ratio"])
    return out


def _geometric(ratios: list[dict]) -> float:
    return math.exp(_log_mean([r["value"] for r in ratios]))


def _estimates(ratios: list[dict]) -> str:
    """One estimate with its interval; several: their geometric mean and range."""
    if len(ratios) == 1:
        (r,) = ratios
        interval = f" ({r['low']:.3g}–{r['high']:.3g})" if r.get("low") is not None else ""
        return f"×{r['value']:.3g}{interval}"
    values = [r["value"] for r in ratios]
    return f"×{_geometric(ratios):.3g} ({len(values)}: {min(values):.3g}–{max(values):.3g})"


def _log_se(ratios: list[dict]) -> tuple[float, int] | None:
    """The standard error of a pool's log estimate and its degrees of freedom: from its reports' spread (three or
    more), or one report's interval (Student's t at its confidence with its executions or blocks less one); none
    from two reports (one degree of freedom), nor from one without an interval."""
    if len(ratios) == 2:
        return None
    if len(ratios) > 2:
        return statistics.stdev(math.log(r["value"]) for r in ratios) / math.sqrt(len(ratios)), len(ratios) - 1
    (r,) = ratios
    if r.get("low") is None or not r.get("executions") or r["executions"] < 2:
        return None
    df = r["executions"] - 1
    return math.log(r["high"] / r["low"]) / (2 * t_quantile(1 - (1 - r["confidence"]) / 2, df)), df


def _z(first: list[dict], second: list[dict]) -> tuple[float, float, bool] | None:
    """The difference of the logs over its standard error, Welch's degrees of freedom, and whether it is beyond
    Student's t at 99 % with those."""
    a, b = _log_se(first), _log_se(second)
    if a is None or b is None or a[0] + b[0] == 0:
        return None
    (se_a, df_a), (se_b, df_b) = a, b
    df = (se_a**2 + se_b**2) ** 2 / (se_a**4 / df_a + se_b**4 / df_b)
    z = (_log_mean([r["value"] for r in second]) - _log_mean([r["value"] for r in first])) / math.hypot(se_a, se_b)
    return z, df, abs(z) > t_quantile(0.995, df)


def _holding(ratios: list[dict], value: float) -> tuple[int, int]:
    """How many of the intervals hold value, of how many there are."""
    with_interval = [r for r in ratios if r.get("low") is not None]
    return sum(r["low"] <= value <= r["high"] for r in with_interval), len(with_interval)


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


def _median_share(values: list[float | None], digits: int = 1) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):.{digits}%}" if known else "—"


if __name__ == "__main__":
    main()
