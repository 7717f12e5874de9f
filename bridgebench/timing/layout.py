"""Memory layout drawn per process execution.

Where a benchmark's code and data land in memory follows from the sizes of its environment, its paths and
whatever it allocates first, so a verdict taken from one layout can flip with the folder the repository was
cloned into (LuaJIT's hot counters are indexed by bytecode address; Mytkowicz et al. 2009 showed the
environment's size alone biasing results). Drawing the layout afresh for every process execution, as
Stabilizer does for code, stack and heap, turns that bias into spread between executions, which the
intervals over executions then carry. Two knobs, drawn uniformly: a random-length environment entry (it
moves the initial stack of every probe) and a random-length allocation before the benchmark loads (the
probes that read BRIDGEBENCH_HEAP_PAD: the Lua probe). What was drawn is stored with the execution. In a
lock-step block the members share one draw (`--layout shared`, the default there): each member's layout is as random
as before, and a layout that the mechanisms answer alike no longer sways their ratio.
"""

from __future__ import annotations

import random

ENV_PAD = "BRIDGEBENCH_LAYOUT_PAD"
HEAP_PAD = "BRIDGEBENCH_HEAP_PAD"
MAX_PAD = 4096  # bytes: well past a page and LuaJIT's 64 hot counters × 4-byte instructions (256 bytes)

_draws = random.SystemRandom()  # fresh every execution, also in a resumed campaign: layouts are a sample


def draw() -> dict[str, int]:
    """One execution's layout: the environment entry's length and the allocation's, in bytes."""
    return {"env_pad": _draws.randrange(MAX_PAD), "heap_pad": _draws.randrange(MAX_PAD)}


def applied(env: dict[str, str], drawn: dict[str, int]) -> dict[str, str]:
    """The environment with the drawn layout's entries."""
    return {**env, ENV_PAD: "x" * drawn["env_pad"], HEAP_PAD: str(drawn["heap_pad"])}
