"""What the load driver can do on this machine (issue #10): a benchmark, not a test.

    .venv/bin/python evidence/load_driver.py [--duration 3] [--warmup 1]

It builds evidence/hello (a net/http server that answers "hello"), starts it through bridgebench.loadtest's
Server pinned to CPU 0, and drives it with the load driver pinned to CPU 1 with GOMAXPROCS=1: closed loop
(saturation), then constant rates of 20 000, 50 000 and 80 000 requests a second. It prints one markdown
row a run: achieved rate, latency percentiles from the intended send times, dispatch lag, what was
censored, and the run's disturbance audit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bridgebench.loadtest import driver
from bridgebench.loadtest.server import Server

REPO = Path(__file__).resolve().parents[1]

RUNS = ((0, 32), (20_000, 64), (50_000, 64), (80_000, 128))  # (rate, connections); rate 0: closed loop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args()
    pin = shutil.which("taskset") is not None and len(os.sched_getaffinity(0)) >= 2
    env = dict(os.environ) | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with tempfile.TemporaryDirectory(prefix="bridgebench-load-bench-") as work:
        hello = Path(work) / "hello"
        subprocess.run(["go", "build", "-o", str(hello), "."], cwd=REPO / "benchmarks" / "hello", env=env,
                       check=True)
        spec = Path(work) / "spec.json"
        spec.write_text(json.dumps({"variants": [{"name": "hello", "weight": 1, "method": "GET", "path": "/"}]}))
        server_argv = [*(("taskset", "-c", "0") if pin else ()), str(hello), "{port}"]
        print(f"driver: GOMAXPROCS=1{', CPU 1' if pin else ''}; server: evidence/hello{', CPU 0' if pin else ''}; "
              f"{args.warmup:g} s warm-up, {args.duration:g} s recorded")
        print("| mode | connections | achieved req/s | p50 / p99 / max (ms) | dispatch lag p99 (ms) | censored "
              "| errors | others (cores) | steal (cores) | disturbed |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        with Server(server_argv, dict(os.environ), Path(work)) as server:
            for rate, connections in RUNS:
                r = driver.run(spec, server, rate=rate, connections=connections, warmup_s=args.warmup,
                               duration_s=args.duration, prefix=("taskset", "-c", "1") if pin else (),
                               env=dict(os.environ) | {"GOMAXPROCS": "1"})
                lat, lag, machine = r["latency"], r["lag"], r["machine"] or {}
                ms = " / ".join(f"{lat.get(k, 0) * 1e3:.2f}" for k in ("p50", "p99", "max"))
                mode = "closed loop" if rate == 0 else f"{rate:,} req/s".replace(",", " ")
                lag_p99 = f"{lag['p99'] * 1e3:.2f}" if "p99" in lag else "—"
                print(f"| {mode} | {connections} | {r['achieved_rate']:.0f} | {ms} | {lag_p99} | {r['censored']} "
                      f"| {sum(r['errors'].values())} | {machine.get('others_cores', float('nan')):.3f} "
                      f"| {machine.get('steal_cores', float('nan')):.3f} | {machine.get('disturbed') or 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
