"""What the rest of the machine did while a process execution ran: the disturbance audit.

Around every execution the runner samples /proc/stat (every CPU's busy and steal time, in clock ticks)
and the harness's own CPU time; the launcher reports the benchmark's own CPU time (wait4). What was busy
and was neither the benchmark nor the harness is *others*: other processes, other containers of the same
VM. *Steal* is time the hypervisor gave this VM's CPUs to someone else. Both are in cores (CPU-seconds per
second of the execution's wall time), so 1.0 means one whole core.

An execution is *disturbed* when others used more than a set share of a core, when steal took more than
a set share, or when the benchmark's wall time exceeds its CPU time by more than a set margin while the
machine was not idle. The defaults come from measurements documented in docs/methodology.md.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass, replace
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
PROC_STAT = Path("/proc/stat")
PROC_LOADAVG = Path("/proc/loadavg")


@dataclass(frozen=True)
class Thresholds:
    others_cores: float = 0.25  # others used more than a quarter of a core on average
    steal_cores: float = 0.10  # the hypervisor took more than a tenth of a core
    # wall above CPU by more than this share of wall (a CPU-bound benchmark waited for a CPU), counted
    # only when the machine was not otherwise idle: a benchmark that waits by design (an RPC plugin) on
    # a quiet machine is not disturbed
    unaccounted_share: float = 0.10
    min_seconds: float = 0.03  # below this much stolen time in all, /proc/stat's 10 ms ticks are noise


DEFAULT = Thresholds()


@dataclass(frozen=True)
class Sample:
    """A moment: the machine's busy and steal ticks (all CPUs), the harness's own CPU seconds, the time."""

    busy_ticks: int
    steal_ticks: int
    harness_cpu_s: float
    at: float


@dataclass(frozen=True)
class Audit:
    wall_s: float
    cpu_s: float | None  # the benchmark's own user + system time (None: the launcher could not say)
    others_cpu_s: float
    steal_s: float
    load1: float | None
    waited_s: float = 0.0  # time spent waiting for a quiet machine before the execution (--wait-quiet)
    disturbed: str | None = None  # why, or None


def _stat_ticks(text: str) -> tuple[int, int]:
    """(busy, steal) ticks from /proc/stat's aggregate line. Busy is user + nice + system + irq + softirq
    (guest time is already inside user); idle and iowait are not busy; steal is counted apart."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = [int(x) for x in line.split()[1:]]
            fields += [0] * (8 - len(fields))
            user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
            return user + nice + system + irq + softirq, steal
    raise ValueError("no aggregate cpu line in /proc/stat")


def _harness_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sample() -> Sample | None:
    """Now, or None where /proc/stat cannot be read (then executions are not audited, and say so)."""
    try:
        busy, steal = _stat_ticks(PROC_STAT.read_text())
    except (OSError, ValueError):
        return None
    return Sample(busy, steal, _harness_cpu_s(), time.monotonic())


def load1() -> float | None:
    try:
        return float(PROC_LOADAVG.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def others_cpu_s(before: Sample, after: Sample, own_cpu_s: float) -> float:
    """CPU seconds that neither the benchmark (own_cpu_s) nor the harness used between the samples."""
    busy_s = (after.busy_ticks - before.busy_ticks) * TICK_S
    harness_s = after.harness_cpu_s - before.harness_cpu_s
    return max(0.0, busy_s - own_cpu_s - harness_s)


def judge(audit: Audit, limits: Thresholds = DEFAULT) -> str | None:
    """Why the execution is disturbed, or None."""
    if audit.wall_s <= 0:
        return None
    reasons = []
    others = audit.others_cpu_s / audit.wall_s
    steal = audit.steal_s / audit.wall_s
    if others > limits.others_cores and audit.others_cpu_s >= limits.min_seconds:
        reasons.append(f"others used {others:.2f} cores")
    if steal > limits.steal_cores and audit.steal_s >= limits.min_seconds:
        reasons.append(f"steal took {steal:.2f} cores")
    if audit.cpu_s is not None:
        unaccounted = audit.wall_s - audit.cpu_s
        busy_elsewhere = audit.others_cpu_s + audit.steal_s >= limits.min_seconds
        if unaccounted > limits.unaccounted_share * audit.wall_s and unaccounted >= limits.min_seconds \
                and busy_elsewhere:
            reasons.append(f"wall exceeded CPU by {unaccounted / audit.wall_s:.0%}")
    return "; ".join(reasons) or None


def audit(before: Sample | None, after: Sample | None, wall_s: float, cpu_s: float | None,
          limits: Thresholds = DEFAULT, *, own_cpu_s: float | None = None) -> Audit | None:
    """The audit of one execution between two samples (None if either could not be taken). A wait for a
    quiet machine before it is added by whoever waited. `own_cpu_s` is what is left out of others when it
    is not cpu_s: a load run's driver and server, which wait on each other by design, give it with cpu_s
    None, so the wall-above-CPU rule does not apply to them."""
    if before is None or after is None:
        return None
    own = cpu_s if own_cpu_s is None else own_cpu_s
    result = Audit(wall_s=wall_s, cpu_s=cpu_s, others_cpu_s=others_cpu_s(before, after, own or 0.0),
                   steal_s=(after.steal_ticks - before.steal_ticks) * TICK_S, load1=load1())
    return replace(result, disturbed=judge(result, limits))


def wait_quiet(max_s: float, limits: Thresholds = DEFAULT, window_s: float = 0.5) -> float:
    """Wait, at most max_s seconds, until a window of window_s passes in which others used at most
    limits.others_cores and steal at most limits.steal_cores. Returns the seconds waited (as Krun does
    before each execution; the wait is recorded with the execution)."""
    start = time.monotonic()
    while time.monotonic() - start < max_s:
        before = sample()
        time.sleep(window_s)
        after = sample()
        if before is None or after is None:
            break
        span = after.at - before.at
        others = others_cpu_s(before, after, 0.0) / span
        steal = (after.steal_ticks - before.steal_ticks) * TICK_S / span
        if others <= limits.others_cores and steal <= limits.steal_cores:
            break
    return time.monotonic() - start
