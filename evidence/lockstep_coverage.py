"""How often lock-step intervals hold the planted ratio (stats/lockstep.py), by the number of blocks: on
planted blocks whose rounds share the host's speed steps (up to 50 %) and whose processes differ by 1 %
(`steps`), or fall into speed modes, each process 0 % or 6 % slower at even odds (`modes`). Seeded, so the
same on any machine; a benchmark of the method, not a test (tests/test_lockstep.py holds 5 blocks to it).

    .venv/bin/python evidence/lockstep_coverage.py [--reps 2000] [--blocks 3,5,8,12]
"""

from __future__ import annotations

import argparse

import numpy as np

from bridgebench.stats.lockstep import lockstep_ratio


def planted_blocks(rng: np.random.Generator, truth: float, k: int, rounds: int = 30,
                   process_sd: float = 0.01, mode: float = 0.0) -> list[tuple[list[float], list[float]]]:
    """Blocks whose rounds share the machine's speed (steps of up to 50 %) and whose processes differ by
    process_sd (log scale) and, with `mode`, are each that much slower or not, at even odds (LuaJIT's speed
    modes); B truly `truth` times A."""
    out = []
    for _ in range(k):
        machine = np.exp(rng.choice([0.0, 0.1, 0.4], size=rounds))  # the host's steps, shared by a round
        a_level, b_level = np.exp(rng.normal(0, process_sd, 2)) * (1 + mode * (rng.random(2) < 0.5))
        a = machine * a_level * np.exp(rng.normal(0, 0.003, rounds))
        b = machine * b_level * truth * np.exp(rng.normal(0, 0.003, rounds))
        out.append((a.tolist(), b.tolist()))
    return out


PLANTS = {"steps": {"process_sd": 0.01}, "modes": {"process_sd": 0.0, "mode": 0.06}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--blocks", default="3,5,8,12")
    args = ap.parse_args()
    print("| planted | blocks | covers 1 | covers 1.02 |\n|---|---|---|---|")
    for name, plant in PLANTS.items():
        for k in (int(b) for b in args.blocks.split(",")):
            shares = []
            for truth in (1.0, 1.02):
                rng = np.random.default_rng([k, int(truth * 100)])
                held = sum(lockstep_ratio(planted_blocks(rng, truth, k, **plant)).holds(truth)  # type: ignore[arg-type]
                           for _ in range(args.reps))
                shares.append(f"{held / args.reps:.1%}")
            print(f"| {name} | {k} | {shares[0]} | {shares[1]} |")


if __name__ == "__main__":
    main()
