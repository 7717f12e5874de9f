"""What bridgebench's verdicts cost and how good they are on this machine, quiet and beside a CPU-bound
process: a benchmark of the harness itself (issue #9), not a test.

    .venv/bin/python evidence/verdicts.py run [--states quiet,busy] [--selftest-repetitions 25] OUT_DIR
    .venv/bin/python evidence/verdicts.py table OUT_DIR
    .venv/bin/python evidence/verdicts.py adopt OUT_DIR REPORT.json --wall-s S --state quiet --step fixed
    .venv/bin/python evidence/verdicts.py rejudge OUT_DIR --state quiet

`run` does, for each machine state (quiet: nothing else started; busy: one CPU-bound process of ours for the
whole step):
- `bridgebench run lua-vms --budget fixed` (the old default, 3 × 50) and `bridgebench run lua-vms` (the
  adaptive default), each timed as a whole command (build cached, answer check, executions, analysis,
  reports), each into its own store under OUT_DIR;
- `bridgebench selftest -n N --json` (planted flat / warm-up / slowdown / no steady state, A vs A, +5%).
Each step appends one JSON line to OUT_DIR/figures.jsonl. `table` prints them as markdown. `adopt` records a
campaign measured before by the same command (its JSON report, and the command's wall time as measured).
`rejudge` judges a state's stored self-test campaigns again under the current rules (nothing is run). Steps run one
after another, never two at once; what else ran on the machine is the point of the `busy` state, and
the audit's own figures (others' CPU, steal) are printed beside each.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BRIDGEBENCH = [str(REPO / ".venv" / "bin" / "bridgebench")]


@contextlib.contextmanager
def machine_state(state: str) -> Iterator[None]:
    """quiet: nothing of ours besides the step; busy: a CPU-bound process beside it, stopped after."""
    if state == "quiet":
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.send_signal(signal.SIGKILL)
        spinner.wait()


def _half_widths(cells: list[dict], key: str) -> list[float]:
    out = []
    for cell in cells:
        est = cell.get(key)
        if est and est.get("value") and est.get("low") is not None and est.get("high") is not None:
            out.append((est["high"] - est["low"]) / 2 / est["value"])  # an estimate without one is left out
    return out


def campaign_figures(report: dict, baseline: str) -> dict:
    cells = report["cells"]
    ratio_cells = [c for c in cells if c["mechanism"] != baseline]
    ratios = _half_widths(ratio_cells, "ratio")
    steady = _half_widths(cells, "steady_performance")
    executions = [c["executions_ok"] + len(c["failures"]) + (c.get("excluded_disturbed") or 0) for c in cells]
    return {
        "campaign": report["campaign"]["id"],
        "executions": report["campaign"]["executions_stored"],
        "executions_per_cell": [min(executions), statistics.median(executions), max(executions)],
        "median_ratio_ci_half_width": statistics.median(ratios) if ratios else None,
        "median_steady_ci_half_width": statistics.median(steady) if steady else None,
        "classes": {k: sum(c.get("classification") == k for c in cells)
                    for k in sorted({c.get("classification") for c in cells if c.get("classification")})},
        "audit": report.get("audit"),
        "adaptive": report.get("adaptive"),
    }


def timed_json(cmd: list[str], ok: tuple[int, ...]) -> tuple[dict, float, int]:
    """Run a bridgebench command that prints JSON: its report, its wall time, its exit code (one of ok)."""
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout), wall, done.returncode


def run_campaign(out: Path, state: str, budget: str) -> dict:
    store = out / f"lua-vms-{budget}-{state}.sqlite"
    cmd = [*BRIDGEBENCH, "run", "lua-vms", "--store", str(store), "--report-dir", str(out / "reports"), "--json"]
    if budget != "default":
        cmd += ["--budget", budget]
    report, wall, code = timed_json(cmd, (0, 4))
    return {"step": f"lua-vms --budget {budget}", "state": state, "wall_s": wall, "exit": code,
            **campaign_figures(report, report["baseline"])}


def run_selftest(out: Path, state: str, repetitions: int) -> dict:
    report, wall, code = timed_json([*BRIDGEBENCH, "selftest", "-n", str(repetitions), "--json", "--store",
                                     str(out / f"selftest-{state}.sqlite")], (0, 5))
    return {"step": f"selftest -n {repetitions}", "state": state, "wall_s": wall, "exit": code,
            "verdict": report["verdict"], "tally": report["tally"]}


def run(args: argparse.Namespace) -> None:
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([*BRIDGEBENCH, "build", "lua-vms"], cwd=REPO, check=True, capture_output=True)
    steps = [s.strip() for s in args.steps.split(",")]
    for state in args.states.split(","):
        for step in steps:
            with machine_state(state):
                if step == "selftest":
                    record = run_selftest(out, state, args.selftest_repetitions)
                else:
                    record = run_campaign(out, state, step)
            record["load_after"] = os.getloadavg()[0]
            with (out / "figures.jsonl").open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(json.dumps({k: record[k] for k in ("step", "state", "wall_s")}), flush=True)


def _pct(x: float | None) -> str:
    return f"±{x:.1%}" if x is not None else "—"


def table(args: argparse.Namespace) -> None:
    records = [json.loads(line) for line in (Path(args.out_dir) / "figures.jsonl").read_text().splitlines()]
    print("| step | machine | wall | executions (per cell min/median/max) | median ratio CI | median steady CI "
          "| disturbed executions | others' CPU (median / max cores) | steal (max cores) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in records:
        if "tally" in r:
            continue
        a = r.get("audit") or {}
        per_cell = "/".join(f"{x:g}" for x in r["executions_per_cell"])
        others = f"{a.get('others_cores_median') or 0:.2f} / {a.get('others_cores_max') or 0:.2f}"
        print(f"| {r['step']} | {r['state']} | {r['wall_s'] / 60:.1f} min | {r['executions']} ({per_cell}) | "
              f"{_pct(r['median_ratio_ci_half_width'])} | {_pct(r['median_steady_ci_half_width'])} | "
              f"{a.get('disturbed', '—')} | {others} | {a.get('steal_cores_max') or 0:.2f} |")
    print()
    print("| self-test | machine | check | target | right (quiet executions) | right (disturbed; the rest flagged) "
          "| verdict |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        for t in r.get("tally", []):
            print(f"| {r['step']} | {r['state']} | {t['check']} | ≥ {t['target']:.0%} | "
                  f"{t['quiet_right']}/{t['quiet']} | {t['disturbed_right']}/{t['disturbed']} | {t['verdict']} |")


def adopt(args: argparse.Namespace) -> None:
    report = json.loads(Path(args.report).read_text())
    record = {"step": f"lua-vms --budget {args.step}", "state": args.state, "wall_s": args.wall_s, "exit": 0,
              "adopted_from": args.report, **campaign_figures(report, report["baseline"])}
    with (Path(args.out_dir) / "figures.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")


def rejudge(args: argparse.Namespace) -> None:
    store = Path(args.out_dir) / f"selftest-{args.state}.sqlite"
    report, _, code = timed_json([*BRIDGEBENCH, "selftest", "--rejudge", "--json", "--store", str(store)], (0, 5))
    record = {"step": f"selftest ({len({f['campaign'] for f in report['findings']})} repetitions, re-judged)",
              "state": args.state, "wall_s": None, "exit": code, "verdict": report["verdict"],
              "tally": report["tally"]}
    with (Path(args.out_dir) / "figures.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("out_dir")
    r.add_argument("--states", default="quiet,busy")
    r.add_argument("--steps", default="fixed,default,selftest")
    r.add_argument("--selftest-repetitions", type=int, default=25)
    t = sub.add_parser("table")
    t.add_argument("out_dir")
    a = sub.add_parser("adopt")
    a.add_argument("out_dir")
    a.add_argument("report")
    a.add_argument("--wall-s", type=float, required=True)
    a.add_argument("--state", required=True)
    a.add_argument("--step", required=True)
    j = sub.add_parser("rejudge")
    j.add_argument("out_dir")
    j.add_argument("--state", required=True)
    args = parser.parse_args()
    {"run": run, "table": table, "adopt": adopt, "rejudge": rejudge}[args.command](args)


if __name__ == "__main__":
    main()
