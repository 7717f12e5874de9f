"""The luajit-consistency study's tables (studies/luajit-consistency/README.md), from a campaign in a store.

1. Per benchmark, the spread between process executions (sd of their log steady means, about the CV) under
   each factor, with its 99 % chi-square interval (bridgebench/stats/spread.py: exact for lognormal
   executions, a rough guide with speed modes).
2. The load address: over the executions of `pinned` and its shifted twins (and of `hotcount-pinned` and its
   twins), the share of the spread that lies between shifts (η²), the F test's p-value, and how many distinct
   trace signatures the shifts compiled (one: the load address did not change which traces were made).
   Also per cell, the distinct trace signatures among its executions.
3. The post's comparison: 4096 hot counters against the stock build, the ratio of their spreads with its
   99 % F interval: fell, rose or undecided per benchmark.
4. Speed modes and trace signatures: per cell whose executions fall into modes, how many executions the
   others with the same signature predict (leave-one-out), beside always guessing the commonest mode.

    .venv/bin/python studies/luajit-consistency/evidence/consistency.py results/bridgebench.sqlite CAMPAIGN
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from bridgebench.stats import spread
from bridgebench.store import Store
from bridgebench.timing.analysis import current_analysis
from bridgebench.timing.result import Analysis, Cell

FACTORS = [  # (mechanism, what its spread holds)
    ("debian", "as users run it"),
    ("debian-noaslr", "ASLR off"),
    ("stock", "built here, unchanged"),
    ("fixedseed", "PRNG fixed"),
    ("pinned", "PRNG fixed, ASLR off"),
    ("hotcount", "4096 counters"),
    ("hotloop", "-Ohotloop=5"),
]
SHIFTED = {"pinned": "the load address (64-192 B shifts), 64 counters",
           "hotcount-pinned": "the load address, 4096 counters"}


def _means(cell: Cell | None) -> list[float]:
    return [r.steady_mean for r in cell.per_execution if r.steady_mean] if cell else []


def _table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    """A titled markdown table, a blank line before it."""
    print()
    print(title)
    print()
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _pct(x: float) -> str:
    if x == 0:
        return "0"
    return f"{x:.1%}" if x >= 0.001 else f"{x * 100:.2g}%"  # counts: spreads of a millionth show


def spreads(cells: dict[tuple[str, str], Cell], benchmarks: list[str]) -> None:
    present = [(m, what) for m, what in FACTORS if any((b, m) in cells for b in benchmarks)]
    rows = []
    for b in benchmarks:
        row = [b]
        for m, _ in present:
            est = spread.log_spread(_means(cells.get((b, m))))
            row.append("—" if est is None else
                       f"{_pct(est.sd)} ({_pct(est.low)}–{_pct(est.high)}, n={est.executions})")
        rows.append(row)
    _table("Spread between process executions: sd of log steady means (≈ CV), 99 % interval (executions)",
           ["Benchmark"] + [f"{m} ({what})" for m, what in present], rows)


def trace_signatures(cells: dict[tuple[str, str], Cell], benchmarks: list[str], mechanisms: list[str]) -> None:
    rows = []
    for b in benchmarks:
        row = [b]
        for m in mechanisms:
            records = [r.jit.signature for r in cells[(b, m)].per_execution if r.jit] if (b, m) in cells else []
            row.append(f"{len(set(records))} of {len(records)}" if records else "—")
        rows.append(row)
    _table("Distinct trace signatures among a cell's executions (the same signature: the compiler made the "
           "same traces)", ["Benchmark", *mechanisms], rows)


def _signatures(cell: Cell) -> set[str]:
    return {r.jit.signature for r in cell.per_execution if r.jit}


def shifted(cells: dict[tuple[str, str], Cell], benchmarks: list[str], mechanisms: list[str]) -> None:
    rows = []
    for b in benchmarks:
        row = [b]
        for base in SHIFTED:
            shifts = [m for m in mechanisms if m == base or m.startswith(base + "-shift")]
            groups = [_means(cells.get((b, m))) for m in shifts]
            found = spread.between_groups([g for g in groups if g])
            sd = spread.log_spread([x for g in groups for x in g])
            traces = [_signatures(cells[(b, m)]) for m in shifts if (b, m) in cells]
            said = (f"; traces: {len(set().union(*traces))} signatures in {len(traces)} shifts"
                    if traces and all(traces) else "")
            row.append("—" if found is None or sd is None else
                       f"{found.share:.0%} between shifts (p={found.p_value:.2g}), sd {_pct(sd.sd)} over "
                       f"{found.executions} in {found.groups} shifts{said}")
        rows.append(row)
    _table("The load address: executions grouped by shift (0, 64, 128, 192 B), share of their spread between "
           "shifts (η²) and the F test's p", ["Benchmark", *SHIFTED.values()], rows)


def hot_counters(cells: dict[tuple[str, str], Cell], benchmarks: list[str]) -> None:
    rows, tally = [], Counter()
    for b in benchmarks:
        a, h = _means(cells.get((b, "stock"))), _means(cells.get((b, "hotcount")))
        r = spread.spread_ratio(a, h)
        sa, sh = spread.log_spread(a), spread.log_spread(h)
        if sa is None or sh is None:
            rows.append([b, "—", "—", "—", "too few executions"])
            continue
        if r is None:  # a side without any spread (counts can repeat exactly)
            verdict, shown = ("none either side" if sa.sd == sh.sd == 0
                              else "fell to none" if sh.sd == 0 else "rose from none"), "—"
        else:
            verdict, shown = r.verdict(), f"×{r.ratio:.2f} ({r.low:.2f}–{r.high:.2f})"
        tally[verdict] += 1
        rows.append([b, _pct(sa.sd), _pct(sh.sd), shown, verdict])
    _table("4096 hot counters against the stock build (ASLR on, PRNG from getrandom, as users run it): "
           "sd(hotcount) / sd(stock), 99 % F interval",
           ["Benchmark", "stock sd", "hotcount sd", "ratio (99 %)", "spread"], rows)
    print()
    print("spread " + ", ".join(f"{v} on {n}" for v, n in sorted(tally.items())) + f" of {sum(tally.values())}")


def signatures(analysis: Analysis) -> None:
    rows = []
    every, varied = [0, 0, 0], [0, 0, 0]  # predicted, executions, right by the commonest mode
    for c in analysis.cells:
        runs = [r for r in c.per_execution if r.steady_mean and r.jit]
        if len(runs) < spread.MIN_EXECUTIONS:
            continue
        labels = spread.modes([r.steady_mean for r in runs])
        p = spread.predicted_by([r.jit.signature for r in runs], labels)
        if p is None:
            continue
        counted = [p.predicted, p.executions, round(p.baseline * p.executions)]
        every = [x + y for x, y in zip(every, counted, strict=True)]
        if len(_signatures(c)) > 1:
            varied = [x + y for x, y in zip(varied, counted, strict=True)]
        rows.append([c.benchmark, c.mechanism, str(p.executions),
                     f"{p.modes} ({'/'.join(str(labels.count(m)) for m in range(p.modes))})",
                     str(len(_signatures(c))),
                     f"{p.predicted} ({p.share:.0%}; {p.unmatched} with a signature no other shares)",
                     f"{p.baseline:.0%}"])
    _table("Speed modes and trace signatures (cells whose executions fall into modes; leave-one-out)",
           ["Benchmark", "Mechanism", "Executions", "Modes (executions each)", "Signatures",
            "Predicted by signature", "Guessing the commonest mode"], rows)
    print()
    if not every[1]:
        print("no cell's executions fall into modes")
        return
    print(f"over every cell with modes: {every[0]} of {every[1]} executions ({every[0] / every[1]:.0%}) predicted "
          f"by their signature; always guessing the commonest mode: {every[2]} ({every[2] / every[1]:.0%})")
    if varied[1]:
        print(f"over the cells with modes whose executions compiled different traces: {varied[0]} of {varied[1]} "
              f"({varied[0] / varied[1]:.0%}); the commonest mode: {varied[2]} ({varied[2] / varied[1]:.0%})")
    else:
        print("no cell with modes compiled different traces in different executions")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("campaign", type=int)
    args = parser.parse_args()
    analysis = current_analysis(Store(args.store, create=False), args.campaign)
    if analysis.campaign.study != "luajit-consistency":
        print(f"campaign {args.campaign} is of {analysis.campaign.study}, not luajit-consistency", file=sys.stderr)
        return 2
    cells = {c.key: c for c in analysis.cells}
    benchmarks = list(dict.fromkeys(c.benchmark for c in analysis.cells))
    mechanisms = list(dict.fromkeys(c.mechanism for c in analysis.cells))
    print(f"campaign {args.campaign}, {analysis.metric}: {len(benchmarks)} benchmarks × {len(mechanisms)} "
          "mechanisms")
    spreads(cells, benchmarks)
    trace_signatures(cells, benchmarks, mechanisms)
    shifted(cells, benchmarks, mechanisms)
    hot_counters(cells, benchmarks)
    signatures(analysis)
    return 0


if __name__ == "__main__":
    sys.exit(main())
