"""The nginx-logagg study's tight loop (studies/nginx-logagg/README.md): what each way of counting costs a
request inside nginx, without the load driver. Each server runs its own log-phase function in a loop in
one worker (GET /__bench: batches of calls timed with CLOCK_MONOTONIC, the worker yielding 2 ms between
batches so the collector drains and timers run).

Every server is a fresh nginx (a process execution), started as `bridgebench load` starts it (pinned to
its CPUs); the servers go in blocks, one of each mechanism per block in a random order, so the machine's
drift falls on every mechanism alike. A server is asked `--iterations` times; the first answer is its
warm-up (LuaJIT compiles the loop) and is left out; the server's figure is the median of the rest. The
table gives, per mechanism, the mean over servers with a 99 % Student-t interval, and the difference from
`none` (the empty loop) with Welch's 99 % interval.

    .venv/bin/python studies/nginx-logagg/evidence/logagg_tight.py \
        [--servers 5] [--iterations 6] [--batches 50] [--size 200]
                                                [--mechanisms none,shared,local,ship] [--seed 1]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import random
import statistics
import sys
from pathlib import Path

from bridgebench.build import build_study
from bridgebench.campaign.loadtest import server_for
from bridgebench.stats.executions import over_executions, t_quantile
from bridgebench.study import find_study, read_study

CONFIDENCE = 0.99


def ask(port: int, batches: int, size: int) -> float:
    """One bench request: nanoseconds a call."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", f"/__bench?batches={batches}&size={size}")
        answer = conn.getresponse()
        body = answer.read()
    finally:
        conn.close()
    if answer.status != 200:
        raise SystemExit(f"error: GET /__bench: status {answer.status}: {body[:200]!r}")
    got = json.loads(body)
    return float(got["ns"]) / float(got["calls"])


def welch(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """mean(b) - mean(a) with Welch's interval."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(b) - statistics.fmean(a)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = t_quantile((1 + CONFIDENCE) / 2, df) * se
    return diff, diff - half, diff + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=5, help="fresh servers per mechanism")
    parser.add_argument("--iterations", type=int, default=6, help="bench requests per server (the first: warm-up)")
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--mechanisms", default="none,shared,local,ship")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--build-dir", type=Path, default=Path("build"))
    args = parser.parse_args()
    if args.servers < 2 or args.iterations < 2:
        raise SystemExit("error: --servers and --iterations must be at least 2")
    study = read_study(find_study("nginx-logagg"))
    mechanisms = args.mechanisms.split(",")
    builds = build_study(study, args.build_dir, mechanisms)
    unavailable = {m: b.reason for m, b in builds.items() if not b.available}
    if unavailable:
        raise SystemExit(f"error: unavailable: {unavailable}")
    rng = random.Random(args.seed)
    figures: dict[str, list[float]] = {m: [] for m in mechanisms}
    for block in range(args.servers):
        order = mechanisms[:]
        rng.shuffle(order)
        for mechanism in order:
            with server_for(study, builds[mechanism]) as server:
                times = [ask(server.port, args.batches, args.size) for _ in range(args.iterations)]
            figures[mechanism].append(statistics.median(times[1:]))
            print(f"block {block + 1}, {mechanism}: {figures[mechanism][-1]:.1f} ns a call "
                  f"(iterations {', '.join(f'{t:.1f}' for t in times)})", file=sys.stderr)
    calls = args.batches * args.size
    print(f"{args.servers} fresh servers per mechanism, {args.iterations - 1} measured requests of {calls} calls "
          "each (after one warm-up request); 99 % intervals over servers.\n")
    print("| mechanism | ns a call (99% CI) | minus `none` (99% CI, Welch) |")
    print("|---|---|---|")
    for mechanism in mechanisms:
        est = over_executions(figures[mechanism], confidence=CONFIDENCE, scale="linear")
        assert est is not None
        ci = f" ({est.low:.1f}–{est.high:.1f})" if est.low is not None and est.high is not None else ""
        extra = "—"
        if mechanism != "none" and "none" in figures:
            d, lo, hi = welch(figures["none"], figures[mechanism])
            extra = f"{d:+.1f} ({lo:+.1f} to {hi:+.1f})"
        print(f"| {mechanism} | {est.value:.1f}{ci} | {extra} |")


if __name__ == "__main__":
    main()
