"""Real A/A comparisons on this machine: campaigns of lua-vms's `aa` budget (LuaJIT against itself under
another name, luajit-again), run one after another into one store, quiet or beside a CPU-bound neighbour,
then counted by evidence/coverage.py. A benchmark of the harness's statistics (issue #22), not a test.

    .venv/bin/python evidence/aa.py OUT/quiet.sqlite --campaigns 8
    .venv/bin/python evidence/aa.py OUT/default.sqlite --campaigns 13 --budget aa-default
    .venv/bin/python evidence/aa.py OUT/busy.sqlite --campaigns 8 --busy
    .venv/bin/python evidence/coverage.py OUT/quiet.sqlite --pair luajit:luajit-again \\
        --across luajit --across luajit-again

Each campaign gives one A/A ratio a benchmark inside it (luajit-again over luajit, paired by round once
they share 5), and two campaigns side by side give one more a benchmark and mechanism (the same mechanism
in both, Welch's t). `--busy` runs one busy loop of its own for as long as the campaigns do (on a 2-vCPU
machine: one core taken), so the audit flags the executions and the count says how the intervals fare on
a busy machine. `--budget aa-default` runs the pair under the default campaign's rules instead (first 3
blocks, look points, stopped once decided; methodology §9), so the count is the default's own error rate;
`--budget plus2-default` runs LuaJIT against a twin that does more real work (luajit-plus2), so how often its
ratios stop *slower* is the default's power on that planted difference (counted with --pair
luajit:luajit-plus2=1.02, and the work it really is with `run lua-vms --budget instructions`).
`--budget aa-interp` runs PUC Lua 5.1 against itself (lua51-again) beside LuaJIT under the default's rules for
the interpreters' cells (counted with --pair lua51:lua51-again). `--budget aa-beside` runs LuaJIT against
luajit-again with PUC Lua 5.1 in the same blocks, so that while PUC Lua's ratio is open the twins take turns as
long as the default's LuaJIT cells do (with `--turns interleaved`, together; counted with --pair
luajit:luajit-again); `--budget plus2-beside` runs plus2-default's pair with PUC Lua 5.1 in its blocks alike,
for the power of such turns beside that error rate.
`--turns separate,interleaved` runs each campaign both ways, one after the other, into a store each (the
store's name with -separate and -interleaved before its suffix, and reports-separate and reports-interleaved
beside it), so that the machine's drift falls on both alike; `--turns separate,together` does the same with every
block's members at once, timed by their CPU time, and `--turns separate,twins` with the twins' turns at once.
`--layout drawn,shared` does the same with layouts drawn per process execution against one drawn per block (the
stores' names then end -drawn and -shared); with both options, each campaign runs every pair. A
campaign that fails stops the script with its exit code; rerun it to add campaigns to the same store: their
seeds follow on from the campaigns already there, so no two campaigns of a store draw the same orders
(`--first-seed N` starts at seed N instead: to add to campaigns whose store is gone).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bridgebench.store import Store

REPO = Path(__file__).resolve().parents[1]
NEIGHBOUR = "while True: pass"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--campaigns", type=int, default=8)
    ap.add_argument("--busy", action="store_true", help="run a CPU-bound loop beside the campaigns")
    ap.add_argument("--build-dir", default=None, help="default: build/ beside the store")
    ap.add_argument("--budget", default="aa", help="a lua-vms budget of LuaJIT against luajit-again (or plus2-default, "
                    "plus2-beside: against a twin with planted work; aa-interp: PUC Lua 5.1 against lua51-again)")
    ap.add_argument("--benchmarks", default=None, help="comma-separated: only these (default: all 16)")
    ap.add_argument("--max-time", default=None, help="each campaign's cap instead of its budget's (fewer benchmarks: "
                    "a share of it, so that each gets the time it would have had)")
    ap.add_argument("--turns", default=None, help="run's --turns (separate, interleaved, together or twins), or "
                    "several comma-separated: each campaign every way, into a store each; default: run's")
    ap.add_argument("--layout", default=None, help="run's --layout (drawn, shared or fixed), or several "
                    "comma-separated, as --turns; with both, every pair of them")
    ap.add_argument("--first-seed", type=int, default=None, help="the first campaign's seed (default: the "
                    "number of campaigns the store holds): to go on from a lost store without drawing its orders again")
    args = ap.parse_args()
    store = Path(args.store).resolve()
    folder = store.parent
    build = Path(args.build_dir) if args.build_dir else folder / "build"
    ways = [Way(t, lay) for t in split(args.turns) for lay in split(args.layout)]
    apart = {w: w.suffix(several_turns=len(split(args.turns)) > 1, several_layouts=len(split(args.layout)) > 1)
             for w in ways}  # several ways: a store and a reports folder each
    stores = {w: store.with_name(f"{store.stem}{apart[w]}{store.suffix}") for w in ways}
    first = first_seed(list(stores.values()), args.first_seed)
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if args.busy else None
    started = time.monotonic()
    try:
        for i in range(first, first + args.campaigns):
            for w in ways:
                command = [str(REPO / ".venv/bin/bridgebench"), "run", "lua-vms", "--budget", args.budget, "--seed",
                           str(i), "--store", str(stores[w]),
                           "--build-dir", str(build), "--report-dir", str(folder / f"reports{apart[w]}"), "--json",
                           *(["--benchmarks", args.benchmarks] if args.benchmarks else []),
                           *(["--max-time", args.max_time] if args.max_time else []), *w.options()]
                done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                      cwd=REPO, check=False)
                named = f" ({apart[w][1:]})" if apart[w] else ""
                print(f"campaign {i + 1 - first} of {args.campaigns}{named}, seed {i}: exit {done.returncode}, "
                      f"{time.monotonic() - started:.0f} s so far", flush=True)
                if done.returncode != 0:
                    print(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "", file=sys.stderr)
                    return done.returncode
    finally:
        if neighbour:
            neighbour.kill()
            neighbour.wait()
    return 0


@dataclass(frozen=True)
class Way:
    """One way of running each campaign: run's --turns and --layout (None: run's default)."""

    turns: str | None
    layout: str | None

    def options(self) -> list[str]:
        return [*(["--turns", self.turns] if self.turns else []), *(["--layout", self.layout] if self.layout else [])]

    def suffix(self, *, several_turns: bool, several_layouts: bool) -> str:
        """What the way's store and reports folder carry in their names: the ways that vary."""
        return (f"-{self.turns}" if several_turns else "") + (f"-{self.layout}" if several_layouts else "")


def split(listed: str | None) -> list[str | None]:
    return listed.split(",") if listed else [None]


def first_seed(stores: list[Path], given: int | None) -> int:
    """The first campaign's seed: the one given, else the most campaigns any of the stores holds, so that
    no two campaigns of a store draw the same orders."""
    return given if given is not None else max(already(s) for s in stores)


def already(store: Path) -> int:
    """How many campaigns the store holds (none if it does not exist yet)."""
    if not store.exists():
        return 0
    opened = Store(str(store), create=False)
    try:
        return len(opened.campaigns())
    finally:
        opened.close()


if __name__ == "__main__":
    sys.exit(main())
