"""Together turns (`run --turns together`): every member of a lock-step block takes its turn at the same time, timed
by its CPU time.

The harness says go to all of them at once, the kernel's scheduler shares the CPU among them slice by slice (a few
milliseconds), and each iteration is timed by the CPU time of the member's processes (the probe's own CPU clock where
it reports one and is the member's only process, else the kernel's process CPU clock read by the harness: every
thread, none of the waiting), not by the wall clock the probe answers with, which then holds the others' slices too.
Speed steps longer than a slice fall on every member alike, where separate turns share only those longer than a
round; what each member pays for sharing the CPU differs by mechanism (the switches, and more: a longer slice took
only part of it away), so it suits a VM against its twin (docs/methodology.md §13, "Together").
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import time
from dataclasses import replace

from bridgebench.runner import CRASHED, PROTOCOL, TIMEOUT, Execution
from bridgebench.timing.stepped import GO, Live, accept, fail, pop_line, processes_under, read

_CPUCLOCK_SCHED = 2  # the kernel's process-wide CPU clock: every thread's time, the ended ones' too
PROBE_CPU, HARNESS_CPU = "probe", "harness"
WALL_CLOCK = "wall clock: the probe reports no CPU time"  # an execution run alone that could not be put on CPU time


def watch(live: Live) -> None:
    """Once the member is set up (READY): the processes it is, whose CPU time times it (not the launcher, whose
    usage file leaves it out too)."""
    if live.alive and live.proc is not None:
        tree = list(processes_under(live.proc.pid))
        live.pids = tree if live.launched else [live.proc.pid, *tree]


def _cpu_seconds(pids: list[int]) -> float:
    """The CPU time these processes have spent, all threads (clock_getcpuclockid's clock, in Linux's encoding:
    Python has no call for it). Raises OSError once one of them has ended."""
    return sum(time.clock_gettime(((~pid) << 3) | _CPUCLOCK_SCHED) for pid in pids)


def _go(live: Live, index: int, step_timeout_s: float) -> None:
    """Say go to one member of a together turn. Its processes' CPU time is read first, while it waits for the go:
    that reading is exact, where one taken while it runs lacks its time since the scheduler last booked it (up to
    a tick), so an iteration's CPU time is the time from its go to the next one, and its answer's little after."""
    try:
        now = _cpu_seconds(live.pids)
    except OSError:
        fail(live, CRASHED, f"a process of it ended mid-block, before iteration {index + 1}")
        return
    if len(live.cpu) < len(live.answered):  # the iteration before this go
        live.cpu.append(now - live.cpu_at)
    live.cpu_at = now
    try:
        os.write(live.stdin, GO)
    except OSError:
        fail(live, CRASHED, f"ended mid-block, before iteration {index + 1}")
        return
    live.due = time.monotonic() + step_timeout_s


def turns_at_once(lives: list[Live], plan: dict[int, tuple[int, int]], order: list[int],
                  step_timeout_s: float) -> None:
    """Members take their turns at the same time: `plan` gives each its first iteration and how many it makes
    now. The harness says go to every one (in `order`), then to each again as soon as it has answered, until
    each has made its iterations; the scheduler shares the CPU among those still running. A member's last
    iteration has no next go: its CPU time is read once it has answered (it may miss up to a tick), or, if it has
    ended by then, not at all (cpu_times). Where the probe reports its own CPU time, that is used instead."""
    count = {i: plan[i][1] for i in order if plan[i][1] and lives[i].alive}
    made = dict.fromkeys(count, 0)
    for i in count:
        _go(lives[i], plan[i][0], step_timeout_s)
    while True:
        running = [i for i in count if lives[i].alive and made[i] < count[i]]
        if not running:
            return
        left = min(lives[i].due for i in running) - time.monotonic()
        ready = select.select([lives[i].stdout for i in running], [], [], max(0.0, left))[0]
        for i in running:
            live, index = lives[i], plan[i][0] + made[i]
            if live.stdout not in ready:
                if time.monotonic() >= live.due:
                    fail(live, TIMEOUT, f"no answer to iteration {index + 1} within {step_timeout_s:g} s; killed")
                continue
            if not read(live) or b"\n" not in live.buffer:
                continue
            line = pop_line(live)
            if live.buffer and index + 1 < live.member.iterations:  # one go, one line (after its last: its JSON)
                fail(live, PROTOCOL, "printed while it was not its turn (a probe without the stepped mode, or one "
                     "that does not wait for the harness)")
                continue
            if not accept(live, line, index):
                continue
            made[i] += 1
            if len(live.answered) == live.member.iterations:  # its last: no go follows
                with contextlib.suppress(OSError):  # ended already: timed() reads it from what the launcher says
                    live.cpu.append(_cpu_seconds(live.pids) - live.cpu_at)
            elif made[i] < count[i]:
                _go(live, index + 1, step_timeout_s)


def timed(live: Live, run: Execution) -> Execution:
    """A together member's execution (stepped.finish) with its iterations in CPU seconds, and the wall times it
    answered, which held the others' slices too, beside them; failed if its CPU time could not be read."""
    if run.output is None:
        return run
    cpu, source = cpu_times(live, run.output.counters.get("cpu_s"), live.usage)
    if cpu is None:
        return replace(run, status=PROTOCOL, detail=source, output=None)
    return _on_cpu(run, cpu, source)


def alone_on_cpu(run: Execution) -> Execution:
    """An execution run alone in a campaign timed by CPU time (a probe without the stepped mode, or a block's
    last member left): its iterations in the probe's own CPU seconds (its `cpu_s` counter), the wall times
    beside them, so that its cell's ratios set CPU time against CPU time; where the probe reports none, its wall
    times, and `cpu_from` says so."""
    if run.output is None:
        return run
    counter = run.output.counters.get("cpu_s")
    if not _usable(counter, len(run.output.times)):
        return replace(run, output=replace(run.output, info={**run.output.info, "cpu_from": WALL_CLOCK}))
    return _on_cpu(run, list(counter), PROBE_CPU)


def _on_cpu(run: Execution, cpu: list[float], source: str) -> Execution:
    """The execution with its iterations in CPU seconds, the wall times it answered beside them, and where the
    CPU times came from."""
    assert run.output is not None
    info = {**run.output.info, "wall_times": list(run.output.times), "cpu_from": source}
    return replace(run, output=replace(run.output, times=cpu, info=info))


def _usable(counter: list[float] | None, n: int) -> bool:
    """The probe's own CPU times (its `cpu_s` counter) time its iterations: one each, none negative or endless."""
    return counter is not None and len(counter) == n and all(0 <= c < math.inf for c in counter)


def cpu_times(live: Live, counter: list[float] | None, usage: dict[str, float]) -> tuple[list[float] | None, str]:
    """A together member's iterations in CPU seconds, and where they come from: the probe's own CPU time around
    each timed call (its `cpu_s` counter, read inside the process: exact, and the timed call alone) where the
    member is that one process, else the harness's readings from go to go, which hold every process it had when
    it said it was ready (an RPC plugin's server does the work the probe's clock does not see). A probe that has
    ended before its last iteration's could be read has it from its whole CPU time (the launcher's), which then
    holds its exit too. None, and why, if neither is there."""
    n = live.member.iterations
    alone = len(live.pids) <= 1
    if alone and _usable(counter, n):
        return list(counter), PROBE_CPU
    cpu = list(live.cpu)
    if len(cpu) == n - 1 and "user_s" in usage and "sys_s" in usage:
        cpu.append(usage["user_s"] + usage["sys_s"] - live.cpu_at)
    if len(cpu) != n or any(c < 0 for c in cpu):
        return None, "its CPU time per iteration could not be read (it has no cpu_s counter, and it ended first)"
    return cpu, HARNESS_CPU
