"""How fast bridgebench stores and analyses campaigns of the seeds' scale (issue #13): a benchmark of the
harness itself, not a test.

    .venv/bin/python evidence/analysis_scale.py [--benchmarks 16 --mechanisms 5 --executions 30
                                                   --iterations 6000] [--again K] [--keep DIR] [--json]

It builds a synthetic campaign of that shape in a temporary store through the store's own API (one
transaction per process execution, as a campaign stores them), timing each store, then times
`bridgebench analyse` on it in a child process (wall time and the child's peak RSS), then times
`bridgebench report` twice: with the cached analysis it must not analyse again. With `--again K` it then
stores K more process executions (the first K cells of one more round, as an adaptive budget or a block
adds them) and times the analysis again, in this process as a running campaign re-judges: each execution's
classification is kept in the store, so only the new ones are classified.

The series are synthetic but not trivial: per cell a mix of flat, warm-up, slowdown and no-steady-state
executions with noise and a few outliers, so changepoints, outliers and the bootstrap all do real work.
Nothing else should run on the machine meanwhile; the figures come with the machine's load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bridgebench import environment
from bridgebench.build import BuildResult
from bridgebench.protocol import ProbeOutput
from bridgebench.runner import OK, Execution, Task
from bridgebench.store import Store

REPO = Path(__file__).resolve().parents[1]

BRIDGEBENCH = str(REPO / ".venv" / "bin" / "bridgebench")


def series(rng: np.random.Generator, n: int, kind: int, base: float) -> np.ndarray:
    """One execution's iteration times: flat (0), warm-up (1), slowdown (2) or drifting (3), with 2% noise
    and about one outlier in 500."""
    t = np.full(n, base)
    cut = max(1, n // 20)
    if kind == 1:
        t[:cut] *= 1.6
    elif kind == 2:
        t[n // 2:] *= 1.15
    elif kind == 3:
        t *= 1.0 + 0.3 * np.linspace(0.0, 1.0, n)
    t *= 1.0 + 0.02 * rng.standard_normal(n)
    spikes = rng.random(n) < 0.002
    t[spikes] *= 3.0
    return np.abs(t)


def build_store(path: Path | str, benchmarks: int, mechanisms: int, executions: int, iterations: int,
                seed: int) -> tuple[int, list[float]]:
    """A synthetic, complete campaign in the store at `path` (a file or postgresql://…); returns its id and
    the seconds each execution's store took."""
    store = Store(path)
    benches = [f"bench{b:02d}" for b in range(benchmarks)]
    mechs = [f"mech{m}" for m in range(mechanisms)]
    tasks = [Task(seq, b, m, p) for seq, (p, b, m) in enumerate(
        (p, b, m) for p in range(executions) for b in benches for m in mechs)]
    options = {"budget": "synthetic", "process_executions": executions, "iterations": iterations,
               "timeout_s": 600.0, "benchmarks": benches, "mechanisms": mechs, "randomise": False, "seed": seed,
               "wait_quiet_s": 0.0, "until_ci": None, "max_process_executions": None, "max_time_s": None}
    env = environment.capture()
    cid = store.create_campaign("synthetic", "-", "synthetic", {"study": {"study": {"baseline": mechs[0]}},
                                                               "options": options},
                                environment.git_sha(), env, environment.machine_id(env), tasks)
    store.record_builds(cid, {m: BuildResult(m, True, "", "synthetic 1", Path("."), f"hash-{m}", True) for m in mechs},
                        {m: m for m in mechs})
    store.record_check(cid, [(b, m, "agrees", "42", "", 1, None, None) for b in benches for m in mechs])
    rng = np.random.default_rng(seed)
    kinds = {(b, m): rng.choice(4, size=executions, p=[0.55, 0.3, 0.1, 0.05]) for b in benches for m in mechs}
    bases = {(b, m): 1e-4 * (1 + bi) * (1 + 0.5 * mi) for bi, b in enumerate(benches) for mi, m in enumerate(mechs)}
    store_s = []
    for task in tasks:
        key = (task.benchmark, task.mechanism)
        times = series(rng, iterations, int(kinds[key][task.pexec]), bases[key])
        cpu = times * 0.99
        out = ProbeOutput(times.tolist(), "42", 1, {"cpu_s": cpu.tolist()}, {"setup_s": 0.01})
        run = Execution(OK, "", 0, "", out, 10_000, time.time(), float(times.sum()))
        t0 = time.perf_counter()
        store.record_execution(cid, task, run)
        store_s.append(time.perf_counter() - t0)
    store.set_state(cid, "done")
    store.close()
    return cid, store_s


def rejudge(path: Path, cid: int, count: int, iterations: int, seed: int) -> float:
    """Store `count` more executions (a new round's first cells) and time analysis.analyse in this process."""
    from bridgebench.timing.analysis import analyse

    store = Store(path, create=False)
    planned = store.planned(cid)
    cells = list(dict.fromkeys((t.benchmark, t.mechanism) for t in planned))[:count]
    next_seq, round_ = max(t.seq for t in planned) + 1, max(t.pexec for t in planned) + 1
    tasks = [Task(next_seq + i, b, m, round_) for i, (b, m) in enumerate(cells)]
    store.add_planned(cid, tasks)
    rng = np.random.default_rng(seed + 1)
    for task in tasks:
        times = series(rng, iterations, 0, 1e-4)
        out = ProbeOutput(times.tolist(), "42", 1, {"cpu_s": (times * 0.99).tolist()}, {"setup_s": 0.01})
        store.record_execution(cid, task, Execution(OK, "", 0, "", out, 10_000, time.time(), float(times.sum())))
    t0 = time.perf_counter()
    analyse(store, cid)
    seconds = time.perf_counter() - t0
    store.close()
    return seconds


def timed(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024  # ru_maxrss: the largest child so far, in KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmarks", type=int, default=16)
    ap.add_argument("--mechanisms", type=int, default=5)
    ap.add_argument("--executions", type=int, default=30)
    ap.add_argument("--iterations", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--again", type=int, default=0, help="Then store this many more executions and time the "
                    "analysis again, in this process.")
    ap.add_argument("--keep", type=Path, help="Build the store in this folder and keep it.")
    ap.add_argument("--json", action="store_true", help="Print the figures as one JSON object.")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bridgebench-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "scale.sqlite"
    path.unlink(missing_ok=True)
    load_before = os.getloadavg()
    cid, store_s = build_store(path, args.benchmarks, args.mechanisms, args.executions, args.iterations, args.seed)
    total = args.benchmarks * args.mechanisms * args.executions * args.iterations
    analyse = timed([BRIDGEBENCH, "analyse", str(cid), "--store", str(path), "--json"])
    again = rejudge(path, cid, args.again, args.iterations, args.seed) if args.again else None
    report_json = timed([BRIDGEBENCH, "report", str(cid), "--store", str(path), "--format", "json"])
    report_html = timed([BRIDGEBENCH, "report", str(cid), "--store", str(path), "--format", "html",
                         "-o", str(folder / "scale.html")])
    figures = {
        "shape": f"{args.benchmarks} benchmarks × {args.mechanisms} mechanisms × {args.executions} executions × "
                 f"{args.iterations} iterations",
        "iterations": total,
        "store_ms_per_10k_iterations": 1e3 * float(np.median(store_s)) * 10_000 / args.iterations,
        "store_file_mib": path.stat().st_size / 2**20,
        "analyse_wall_s": analyse[0], "analyse_cpu_s": analyse[1], "analyse_peak_rss_mib": analyse[2],
        "report_json_cached_wall_s": report_json[0], "report_html_cached_wall_s": report_html[0],
        **({"again_executions": args.again, "rejudge_in_process_s": again} if again is not None else {}),
        "cpu": environment.capture().get("cpu_model"), "cores": os.cpu_count(),
        "load_before": load_before, "load_after": os.getloadavg(),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:32} {v:.3f}" if isinstance(v, float) else f"{k:32} {v}")
    if not args.keep:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
