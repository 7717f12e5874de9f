"""Lock-step blocks: one fresh process per mechanism of a benchmark, all pinned to one CPU, taking turns
iteration by iteration in an order drawn afresh every round.

This VM's speed steps by 10–50 % for 50 ms to minutes, one vCPU at a time. Processes that live at the same
time on the same vCPU and take turns see the same steps, so the ratio of their adjacent turns cancels them
(docs/methodology.md §12). Each member is a probe in stepped mode (stepped.py), told to go one iteration at a time.

Interleaved (`run --turns interleaved`), the members marked `at_once` (the baseline and its twins; unmarked, the
members whose turns are equal) take their turns together, one iteration each in an order drawn for every iteration,
so that a VM's and its twin's iterations stay adjacent in time however long the turn an interpreter beside them makes
necessary (docs/methodology.md §13). Each of those iterations runs right after another process's, as a turn's first
does, at a fixed cost a turn alone pays once (timed_turns): the baseline (`solo`) then takes a turn alone as well
every round, as with twins (below), and the other members' ratios are set against those. Together
(`run --turns together`), every member takes its turn at the same time, timed by its CPU time (together.py). Twins
(`run --turns twins`), the members marked `at_once` (the campaign marks the baseline and the twins its study names;
unmarked, the members whose turns are equal) take them at the same time and the others theirs alone, every one timed
by its CPU time: what each pays for sharing the CPU is alike between a VM and its twin, not between unlike
mechanisms. So the baseline (a member marked `solo`) also takes a turn alone every round, and the others' ratios are
set against those: beside its twin LuaJIT took 9–19 % more CPU time an iteration than alone on json, deltablue,
havlak, md5 and knucleotide (evidence/twin_cost.py, methodology §13). Its execution's iterations are its lead and
its turns alone, as a member of separate turns has them; its turns beside its twin are kept with its place in the
block (`twin_times`).

A block stores one execution per member, as a sequential campaign does; each carries its place in the block
(`pairing` in the probe's other fields): the block's token, the CPU, its turn (iterations a turn), the
rounds, and its position in each round's drawn order. A member that fails (stepped.py) fails with the reason;
the others go on while two or more are left. The last one left is stopped (ABANDONED): a process stepped alone
runs in another regime (25 % slower here, methodology §13), so its later iterations would be neither paired nor
like its earlier ones; the campaign runs it again alone, in batch mode (campaign/timing.py).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import random
import statistics
import time
import uuid
from collections.abc import Mapping
from dataclasses import replace

from bridgebench import audit
from bridgebench.options import CPU_TIMED
from bridgebench.runner import ABANDONED, PROTOCOL, TIMEOUT, Execution, UsageFile, launcher
from bridgebench.study import INTERLEAVED, SEPARATE, TOGETHER, TURNS, TWINS
from bridgebench.timing import stepped
from bridgebench.timing.stepped import NOT_STEPPED, READY, Member
from bridgebench.timing.together import timed, turns_at_once, watch

__all__ = ["NOT_STEPPED", "Member", "lock_cpu", "run_block", "shared_turns", "timed_turns", "turns"]

TWIN_TIMES = "twin_times"  # a solo member's iterations beside its twin, in its pairing (run_block)
SAME_TURN = 2.5  # members sized within this factor of the fewest take turns of one iteration alike (turns())
SAME_ITERATION = 1.1  # members whose iterations are within this factor take turns of one length (timed_turns())


BLOCK_CPU = "BRIDGEBENCH_BLOCK_CPU"


class CpuError(ValueError):
    """BRIDGEBENCH_BLOCK_CPU names no CPU this process may use."""


def lock_cpu() -> int | None:
    """The CPU a block's processes share: the highest this harness may use (CPU 0 takes interrupts on
    most machines), or the one BRIDGEBENCH_BLOCK_CPU names (two harnesses on one machine, each pinning its
    blocks to a CPU of its own, as the test suite's workers do); None when the harness may use only one
    (nothing to separate the harness from)."""
    cpus = sorted(os.sched_getaffinity(0))
    chosen = os.environ.get(BLOCK_CPU, "").strip()
    if chosen and (not chosen.isdigit() or int(chosen) not in cpus):
        raise CpuError(f"{BLOCK_CPU}={chosen!r} is not one of the CPUs this process may use "
                       f"({', '.join(map(str, cpus))})")
    if len(cpus) < 2:
        return None
    return int(chosen) if chosen else cpus[-1]


def turns(iterations: list[int], like_with_like: bool = True) -> tuple[int, list[int]]:
    """Rounds and each member's turn so that a round's turns take similar time: every member was sized to
    about the same time per execution (so fewer iterations means longer ones), and the member with the fewest
    takes one iteration a turn, the others as many as make the same share of their execution, rounded up: a
    member never makes fewer iterations than it was sized to (a JIT's 50, so that its warm-up is classified,
    would otherwise become 48 beside a member of 8).
    Like with like: every member sized within SAME_TURN of the fewest also takes one iteration a turn, and the
    rounds are as many as the most of those was sized to. A turn's first iteration is not like the others
    (docs/methodology.md §13), so a ratio between members whose turns differ in length carries that; members of
    about the same speed (a VM and its twin, two interpreters) whose sizes differ by noise would otherwise
    take turns of 1 and 2 iterations. Together (`like_with_like` False) there is no first iteration to match:
    what matters is that every member's turn lasts as long, so that none runs alone while the others wait."""
    least = max(1, min(iterations))
    rounds = max([least, *(n for n in iterations if like_with_like and n < SAME_TURN * least)])
    return rounds, [max(1, math.ceil(n / rounds)) for n in iterations]


def anchoring(names: list[str], baseline: str | None, twin_of: Mapping[str, str | None]
              ) -> tuple[int | None, dict[int, int]]:
    """timed_turns's `anchor` and `copy_of` for a block's members by name: the baseline's place (None where it is
    not among them), and each member that copies another's VM (`twin_of`), by the place of the one it copies."""
    anchor = names.index(baseline) if baseline in names else None
    copies = {i: names.index(o) for i, o in enumerate(twin_of.get(m) for m in names) if o in names}
    return anchor, copies


def timed_turns(iterations: list[int], seconds: list[float], turn_s: float, anchor: int | None = None,
                copy_of: Mapping[int, int] | None = None) -> tuple[int, list[int]]:
    """Rounds and each member's turn when every turn lasts about `turn_s` (a member whose iteration is longer:
    one iteration). A turn taken after the block's other processes costs about a fixed time, not a share of an
    iteration (evidence/turn_cause.py --paired: LuaJIT's json +9 %, +5 %, +2 % at turns of 1, 2 and 4 iterations,
    methodology §13), so a ratio's two sides pay alike only when their turns last alike, and little when both
    are long. `seconds`: each member's iteration, estimated. `anchor`: the member the block's ratios are taken to
    (the baseline): its turn is the whole iterations nearest `turn_s`, and every other member's the whole iterations
    nearest the time that turn really lasts, so that each ratio's two turns last as alike as whole iterations allow.
    Each member rounded to `turn_s` on its own could fall either side of a rounding from the anchor's: luajit2's
    havlak read ×1.012 beside LuaJIT's turns of 2 iterations to its 3, and ×1.101 at 3 to its 2, where turns alike
    read ×1.069–×1.085 (2026-11-30; methodology §13, "Turns anchored to the baseline's"). Members whose iterations are
    within SAME_ITERATION of each other (a VM and its twin) take turns of one length: the anchor's, where it is one of
    them, else the longest of theirs. `copy_of`: a member that runs another's own VM (a study's `twin_of`), by the
    member it copies, whose iterations last as that one's whatever the first executions' estimates say (LuaJIT's
    havlak and its copy's were estimated 10–17 % apart in 3 of 13 A/A campaigns, 2026-11-29): that member's turn.
    As many rounds as the member that needs the most to make its sized iterations: none makes fewer. So every member
    runs about as long as the one sized longest, which costs little only where the members were sized alike: a
    campaign uses it in its later blocks (campaign/timing.py; in lua-vms's first blocks PUC Lua ran as long as
    LuaJIT's 50 iterations, about 255 s of 540 against 157, 2026-11-29). Turns no shorter than `turn_s` with each
    member its own work instead (fewer rounds) cost nothing more but left a block one or two rounds, and a speed step
    then falls on one side: PUC Lua's ±5 % held on 3 and 2 of 16 benchmarks (methodology §13)."""
    if len(seconds) != len(iterations) or not all(s > 0 for s in seconds) or turn_s <= 0:
        raise ValueError("timed_turns(): one positive iteration time per member, and a positive turn time")
    members, copy_of = range(len(seconds)), copy_of or {}
    if (anchor is not None and anchor not in members) or any(
            i not in members or j not in members or j in copy_of or i == j for i, j in copy_of.items()):
        raise ValueError(f"timed_turns(): anchor {anchor} or copies {copy_of} not among the {len(seconds)} members, "
                         "or a copy of a copy")
    target = turn_s if anchor is None else max(1, round(turn_s / seconds[anchor])) * seconds[anchor]
    own = [max(1, round(target / s)) for s in seconds]
    turn = list(own)
    for i, s in enumerate(seconds):
        alike = [j for j, t in enumerate(seconds) if max(s, t) <= SAME_ITERATION * min(s, t)]
        turn[i] = own[anchor] if anchor in alike else max(own[j] for j in alike)
    for i, j in copy_of.items():
        turn[i] = turn[j]
    rounds = max(1, *(math.ceil(n / k) for n, k in zip(iterations, turn, strict=True)))
    return rounds, turn


def _solo_split(run: Execution, member: Member, alone: list[int]) -> Execution:
    """A solo member's execution as a member of separate turns has it: its lead and its turns alone, their
    counters and wall times with them; its turns beside its twin under TWIN_TIMES (moved into its pairing)."""
    if run.output is None:
        return run
    n = len(run.output.times)
    keep = [*range(member.lead), *alone]
    twin = sorted(set(range(member.lead, n)) - set(alone))

    def pick(values: list[float], which: list[int]) -> list[float]:
        return [values[k] for k in which]

    info = dict(run.output.info)
    if isinstance(info.get("wall_times"), list) and len(info["wall_times"]) == n:
        info["wall_times"] = pick(info["wall_times"], keep)
    info[TWIN_TIMES] = pick(run.output.times, twin)
    counters = {k: pick(v, keep) if len(v) == n else v for k, v in run.output.counters.items()}
    return replace(run, output=replace(run.output, times=pick(run.output.times, keep), counters=counters, info=info))


def _draw_order(rng: random.Random, units: int, apart: set[frozenset[int]], last: int | None) -> list[int]:
    """A round's order of its units, drawn afresh, where no two units of a pair in `apart` are next to each other
    (nor the first with `last`, the unit that ended the round before), when such an order can be drawn in a few
    tries: a solo member's turn alone right after its turn beside its twin runs on caches its own process left warm
    (havlak on LuaJIT a third faster, methodology §13), and right before, its turn beside its twin does, not its
    twin's."""
    order = list(range(units))
    for _ in range(100):
        rng.shuffle(order)
        pairs = itertools.pairwise([last, *order] if last is not None else order)
        if not any(frozenset(p) in apart for p in pairs):
            break
    return order


def _abandon_a_lone_survivor(lives: list[stepped.Live], round_: int) -> None:
    """Before each round: a block whose other members have all failed stops its last one."""
    alive = [x for x in lives if x.alive]
    if len(lives) > 1 and len(alive) == 1:
        gone = "; ".join(f"{x.failure[0]}" for x in lives if x.failure)
        stepped.fail(alive[0], ABANDONED, f"stopped before round {round_ + 1}: the other members of its block "
                     f"ended ({gone}), and stepped alone a process runs in another regime")


def shared_turns(members: list[Member], turns: str) -> list[list[int]]:
    """The units a round's order is drawn over: each member alone, or (interleaved, twins) the members whose turns
    are equal together, in the members' order; where members are marked `at_once`, those together (a VM and its
    twin, as the campaign names them) and every other member alone."""
    if turns in (TWINS, INTERLEAVED) and any(m.at_once for m in members):
        together = [i for i, m in enumerate(members) if m.at_once]
        if len({members[i].turn for i in together}) != 1:
            raise ValueError("run_block(): the members that take their turns at once must have equal turns")
        return [together, *([i] for i, m in enumerate(members) if not m.at_once)]
    if turns not in (INTERLEAVED, TWINS):
        return [[i] for i in range(len(members))]
    units: dict[int, list[int]] = {}
    for i, m in enumerate(members):
        units.setdefault(m.turn, []).append(i)
    return list(units.values())


def run_block(members: list[Member], *, timeout_s: float, seed: object, cpu: int | None = None,
              step_timeout_s: float | None = None, turns: str = SEPARATE) -> list[Execution]:
    """Run one block: every member started pinned to `cpu`, each READY within timeout_s, then each member's
    lead, one member after another, then rounds in which
    each member still alive takes its turn once (its `turn` iterations), in an order drawn from `seed` (so a
    resumed campaign draws the same orders). Interleaved, the members marked `at_once` (else those whose turns are
    equal) take them together: one iteration each, in an order drawn afresh for each of the turn's iterations, so
    that their iterations are adjacent in time however long the turn (a VM and its twin beside an interpreter's long
    turns).
    Together, every member takes its turn (and its lead) at the same time, timed by its CPU time (together.py);
    the drawn order is then only the order the harness says go in. Twins, the members marked `at_once` (else those
    whose turns are equal) take them (and their leads) at the same time, and the others theirs alone, as separate;
    every member is timed by its CPU time, so that a ratio across sets one clock against the same clock. Twins or
    interleaved, a `solo` member takes a second turn each round, alone, drawn among the units like one (see the
    module's docstring).
    Returns one Execution per member, in the members' order."""
    if not members:
        return []
    if turns not in TURNS:
        raise ValueError(f"run_block(): turns {turns!r}, not one of {', '.join(TURNS)}")
    if any(m.solo for m in members) and turns not in (TWINS, INTERLEAVED):
        raise ValueError("run_block(): only twins and interleaved turns take a turn alone as well (a solo member)")
    rounds = {(m.iterations - m.lead) // (m.turn * (2 if m.solo else 1)) for m in members}
    if len(rounds) != 1 or any((m.iterations - m.lead) % (m.turn * (2 if m.solo else 1))
                               or not 0 <= m.lead < m.iterations for m in members):
        raise ValueError("run_block(): every member's iterations after its lead must be the same number of its "
                         "turns (twice that for a solo member)")
    n_rounds = rounds.pop()
    shared = shared_turns(members, turns)
    # a solo member's turn alone: a unit of its own, after the shared ones (where_solo marks it); it has no lead
    solos = [i for i, m in enumerate(members) if m.solo]
    units = shared + [[i] for i in solos]
    where_solo = set(range(len(shared), len(units)))
    # a solo member's two turns are never next to each other (_draw_order): its unit alone and the one it shares
    apart = {frozenset((len(shared) + k, next(u for u, unit in enumerate(shared) if i in unit)))
             for k, i in enumerate(solos)}
    order: list[int] = []
    made = [m.lead for m in members]  # each member's next iteration
    alone_at: list[list[int]] = [[] for _ in members]  # a solo member's iterations alone, in order
    solo_positions: list[list[int]] = [[] for _ in members]  # and its turn alone's place in each round's order
    # Timed by CPU time: every member, where any takes its turns at the same time as another, so that a ratio's two
    # sides are on one clock; twins, each unit takes its turns at once (a unit of one as separate turns do)
    cpu_timed = turns in CPU_TIMED
    step_limit = step_timeout_s if step_timeout_s is not None else timeout_s
    rng = random.Random(str(seed))
    token = uuid.uuid4().hex[:12]
    launch = launcher()
    harness = os.sched_getaffinity(0)
    if cpu is not None and harness - {cpu}:  # the harness, its threads and its audit keep off the block's CPU
        os.sched_setaffinity(0, harness - {cpu})
    with contextlib.ExitStack() as files:
        files.callback(os.sched_setaffinity, 0, harness)
        usage_files = [files.enter_context(UsageFile()) for _ in members]
        before = audit.sample()
        t0 = time.monotonic()
        lives = [stepped.spawn(m, cpu, launch, u) for m, u in zip(members, usage_files, strict=True)]
        try:
            deadline = time.monotonic() + timeout_s
            for live in lives:
                if live.alive:
                    first = stepped.next_line(live, deadline)
                    if first is not None and first != READY:
                        # A probe without the stepped mode runs its batch to its end, as it would alone:
                        # killed mid-run, a database's client (GT.M) leaves its shared memory behind.
                        live.failure = (PROTOCOL, f"{NOT_STEPPED}: its first line is {first[:60]!r}, not {READY!r}")
                    elif first is None and live.failure and live.failure[0] == TIMEOUT:
                        live.failure = (TIMEOUT, f"not ready within {timeout_s:g} s; killed")
                    elif first is None and live.failure:
                        live.failure = (live.failure[0], f"{NOT_STEPPED}: it ended before it said it was ready")
                    stepped.look(live)
                    if cpu_timed:
                        watch(live)
            # the leads: at the same time where the turns will be (so that every iteration is timed alike), else
            # one member after another; nothing is paired
            for unit in [list(range(len(lives)))] if turns == TOGETHER else shared:
                if cpu_timed:
                    stepped.out_of_turn(lives)
                    turns_at_once(lives, {i: (0, members[i].lead) for i in unit}, unit, step_limit)
                    continue
                for live in (lives[i] for i in unit):
                    for k in range(live.member.lead):
                        stepped.out_of_turn(lives)
                        if not live.alive:
                            break
                        stepped.step(live, k, step_limit)
            starts = []  # each round's start, and the last one's end: what a round lasts
            for r in range(n_rounds):
                starts.append(time.monotonic())
                _abandon_a_lone_survivor(lives, r)
                # without pairs kept apart, one shuffle: the same orders from the same seed as before solo members
                order = _draw_order(rng, len(units), apart, order[-1] if order else None)
                for position, u in enumerate(order):
                    for i in units[u]:
                        (solo_positions[i] if u in where_solo else lives[i].positions).append(position)
                # together, every unit's turn at once, told to go in the drawn order; else one unit after another
                groups = [[i for u in order for i in units[u]]] if turns == TOGETHER else [units[u] for u in order]
                for g, group in enumerate(groups):
                    if cpu_timed:  # the group's members at once (twins: told to go in an order drawn afresh)
                        go = list(group)
                        if turns == TWINS:
                            rng.shuffle(go)
                        stepped.out_of_turn(lives)
                        turns_at_once(lives, {i: (made[i], members[i].turn) for i in group}, go, step_limit)
                    else:
                        turn = members[group[0]].turn  # a unit's members have the same turn
                        for k in range(turn):
                            steps = list(group)
                            rng.shuffle(steps)  # a unit of one draws nothing: separate turns draw as they always did
                            for i in steps:
                                live = lives[i]
                                stepped.out_of_turn(lives)
                                if live.alive:
                                    stepped.step(live, made[i] + k, step_limit)
                    for i in group:  # its turn taken: a solo member's turn alone is kept apart
                        if order[g] in where_solo:
                            alone_at[i] += range(made[i], made[i] + members[i].turn)
                        made[i] += members[i].turn
                        if lives[i].alive and r == n_rounds - 1 and made[i] == members[i].iterations:
                            lives[i].ended = time.monotonic()
                            stepped.look(lives[i])  # after its last turn, before its end: every thread it made is there
            starts.append(time.monotonic())
            runs = [stepped.finish(live, timeout_s) for live in lives]
            if cpu_timed:
                runs = [timed(live, run) for live, run in zip(lives, runs, strict=True)]
            measured = [sum(r.output.times) if r.output else 0.0 for r in runs]  # a solo member's both turns
            runs = [_solo_split(run, m, alone_at[i]) if m.solo else run
                    for i, (m, run) in enumerate(zip(members, runs, strict=True))]
        except BaseException:
            stepped.kill(*lives)
            raise
        wall_s = time.monotonic() - t0
        after = audit.sample()
        usages = [live.usage for live in lives]  # as stepped.finish read them
    # the median round's wall time, every member's turn and the hand-offs: the machine's speed steps shorter
    # than this are not shared by the two sides of a ratio, so taking turns does not cancel them
    round_s = statistics.median(b - a for a, b in itertools.pairwise(starts)) if len(starts) > 1 else None
    cpu_total = sum(u.get("user_s", 0.0) + u.get("sys_s", 0.0) for u in usages)
    machine = audit.audit(before, after, wall_s, cpu_total if all("user_s" in u for u in usages) else None)
    out = []
    others_in_unit = {i: len(unit) - 1 for unit in shared for i in unit}
    for i, (live, run) in enumerate(zip(lives, runs, strict=True)):
        share = wall_s * measured[i] / sum(measured) if sum(measured) > 0 else wall_s / len(runs)
        pairing = {"block": token, "cpu": cpu, "turn": live.member.turn, "lead": live.member.lead,
                   "rounds": n_rounds, "members": len(members), "positions": live.positions, "block_wall_s": wall_s,
                   "round_s": round_s,
                   "processes": live.tree[0], "threads": live.tree[1],
                   "interleaved_with": others_in_unit[i] if turns == INTERLEAVED else 0,
                   "together": turns == TOGETHER or (turns == TWINS and others_in_unit[i] > 0)}
        if run.output is not None:
            twin = run.output.info.get(TWIN_TIMES)
            pairing |= {"solo_positions": solo_positions[i], TWIN_TIMES: twin} if twin is not None else {}
            info = {k: v for k, v in run.output.info.items() if k != TWIN_TIMES}
            run = replace(run, output=replace(run.output, info={**info, "pairing": pairing}))
        # Its wall time is its share of the block's (by the time its iterations took), so that the campaign's
        # clock and the δ by execution length count each block once.
        out.append(replace(run, wall_s=share, machine=machine))
    return out
