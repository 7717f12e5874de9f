"""The ratio of two mechanisms that ran in lock-step blocks (bridgebench/timing/lockstep.py).

In a block the two processes live at the same time on one CPU and take turns, so a round's two turns see
the same machine: the log ratio of their turn means cancels the host's speed steps. A block is a set of
fresh processes, so blocks differ by what processes of one VM differ by (layout, JIT decisions); the block
is the unit of inference. Each block's value is the mean of its rounds' log ratios (the rounds where both
processes are steady), and the interval is Student's t over blocks: exp(mean ± t · sd / √k) with k - 1
degrees of freedom. Fewer than MIN_EXECUTIONS blocks: an estimate, no interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from bridgebench.stats.bootstrap import Estimate
from bridgebench.stats.executions import MIN_EXECUTIONS, over_executions

LOCKSTEP_METHOD = "lock-step blocks: Student's t over blocks of each block's mean log ratio"
# Where processes fall into speed modes, an interval over blocks that all drew the same mode sees nothing of the
# other and misses the truth; with two even modes that happens in all_alike(k) of the campaigns of k blocks,
# under 1 % from 8 on (methodology §13: the planted modes held at 8 blocks, not at 5).
MODES_BLOCKS = 8


def all_alike(blocks: int) -> float:
    """How often every one of `blocks` processes draws the same of two speed modes at even odds."""
    return 2 * 0.5 ** blocks


def block_log_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """One block's value: the mean over its shared steady rounds of log(B's turn mean / A's)."""
    if len(a) != len(b) or not len(a):
        raise ValueError("block_log_ratio() needs the same rounds on both sides, at least one")
    # Plain floats, not numpy: this runs for every block at every look, mostly on a few rounds, where numpy's
    # per-call cost is most of the time (evidence/sequential.py spent 4 s of its 7 here).
    logs = []
    for x, y in zip(a, b, strict=True):
        if not (0 < x < math.inf and 0 < y < math.inf):
            raise ValueError("block_log_ratio(): a turn mean that is not a positive number")
        logs.append(math.log(y / x))
    return math.fsum(logs) / len(logs)


def round_logs(blocks: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[np.ndarray]:
    """Each block's rounds' log ratios, B's turn mean over A's."""
    return [np.log(np.asarray(b, dtype=float) / np.asarray(a, dtype=float)) for a, b in blocks]


class BlockSpread(NamedTuple):
    """What a ratio's lock-step blocks spread by (spread())."""

    within: float | None  # the sd of a round's log ratio within a block
    between: float | None  # the sd of the blocks' values between them
    share: float | None  # the share of the variance between blocks that the noise within accounts for


def spread(blocks: Sequence[tuple[Sequence[float], Sequence[float]]]) -> BlockSpread:
    """What taking turns leaves of the machine's steps, beside what processes differ by, and how much of the
    second the first makes up.

    within: the root of the mean over blocks of each block's variance of its rounds' log ratios. Each block counts
    once, as in the share: a campaign's first blocks take one-iteration turns over many rounds, noisier a round
    than its later blocks' longer turns, and pooled over every round they would pass for the later ones'.

    between: the sd of the blocks' values (block_log_ratio), what the interval is Student's t over.

    share: how much of the variance between blocks the noise within them accounts for. A block's mean log ratio
    carries its rounds' variance divided by their number, so the mean over blocks of that (each block's own), over
    the variance between blocks. The noise within is the host's speed steps that taking turns did not cancel and
    the benchmark's own from one round to the next (a collector's cycle). Near 1 it sets the interval's width, and
    a quieter machine would narrow it (more rounds a block too, at a cost in time: evidence/rounds_per_block.py);
    near 0, processes and layouts differ by that much and only more blocks do. It can pass 1 by chance (both
    variances are estimated), and it takes a block's rounds as independent: where neighbouring rounds' ratios move
    together, it reads low.

    Blocks of one round have no variance within and are left out of within and share; None where nothing is
    left, with fewer than two blocks (between, share), or with no spread between blocks (share)."""
    logs = round_logs(blocks)
    several = [w for w in logs if len(w) > 1]
    variances = [float(np.var(w, ddof=1)) for w in several]
    within = math.sqrt(float(np.mean(variances))) if variances else None
    if len(logs) < 2:
        return BlockSpread(within, None, None)
    between = float(np.var([float(np.mean(w)) for w in logs], ddof=1))
    noise = [v / len(w) for v, w in zip(variances, several, strict=True)]
    share = float(np.mean(noise)) / between if noise and between > 0 else None
    return BlockSpread(within, math.sqrt(between), share)


def lockstep_ratio(blocks: Sequence[tuple[Sequence[float], Sequence[float]]], *, confidence: float = 0.99,
                   min_blocks: int = MIN_EXECUTIONS) -> Estimate:
    """B over A from blocks, each the two sides' turn means in the rounds both were steady (aligned): one
    ratio a block, and Student's t over them on the log scale, as over process executions."""
    if not blocks:
        raise ValueError("lockstep_ratio() needs at least one block")
    ratios = [math.exp(block_log_ratio(a, b)) for a, b in blocks]
    estimate = over_executions(ratios, confidence=confidence, scale="log", min_executions=min_blocks)
    assert estimate is not None
    return replace(estimate, method=LOCKSTEP_METHOD) if estimate.has_interval else estimate
