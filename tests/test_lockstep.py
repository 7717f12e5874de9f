"""Lock-step blocks (bridgebench/timing/lockstep.py) and their estimator (stats/lockstep.py): the stepped protocol
with real processes (a probe that answers out of turn, too late, with garbage, or dies mid-block is an error
with its reason, and the others go on), pinning, the drawn orders, the real probes' stepped mode, and the
estimator against planted data with known truth. No test depends on the machine's speed: the fixture probe
reports fixed times."""

from __future__ import annotations

import itertools
import math
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bridgebench.runner import ABANDONED, CRASHED, OK, PROTOCOL, TIMEOUT
from bridgebench.stats.bootstrap import Estimate
from bridgebench.stats.executions import TOO_FEW
from bridgebench.stats.lockstep import LOCKSTEP_METHOD, block_log_ratio, lockstep_ratio, spread
from bridgebench.store import Store
from bridgebench.study import INTERLEAVED, SEPARATE, TOGETHER, TWINS
from bridgebench.timing import layout, lockstep, stepped
from bridgebench.timing.analysis import current_analysis
from bridgebench.timing.report import tables
from bridgebench.timing.together import HARNESS_CPU, PROBE_CPU, cpu_times
from evidence.lockstep_coverage import planted_blocks
from tests.conftest import FIXTURES, REPO, stepped_mechanism, stepped_study

PROBE = FIXTURES / "stepped_probe.py"
ENV = {"PATH": os.environ["PATH"]}


def member(behaviour: str, iterations: int = 6, turn: int = 1, **env: str) -> lockstep.Member:
    return lockstep.Member([sys.executable, str(PROBE), behaviour, str(iterations)], ENV | env, Path.cwd(),
                           iterations, turn)


def test_a_block_runs_every_member_in_turns_pinned_to_one_cpu() -> None:
    cpu = lockstep.lock_cpu()
    harness = os.sched_getaffinity(0)
    runs = lockstep.run_block([member("good", LEVEL="0.001"), member("good", 12, 2, LEVEL="0.002")],
                              timeout_s=30, seed="s", cpu=cpu)
    assert [r.status for r in runs] == [OK, OK], [r.detail for r in runs]
    assert os.sched_getaffinity(0) == harness  # the harness's own CPUs are given back
    first, second = (r.output.info for r in runs if r.output)
    assert first["pairing"]["block"] == second["pairing"]["block"]
    assert (first["pairing"]["turn"], second["pairing"]["turn"], first["pairing"]["rounds"]) == (1, 2, 6)
    if cpu is not None:
        assert first["cpus"] == second["cpus"] == [cpu]
    # each round's order is a permutation of the members, drawn from the seed: the same seed draws it again
    orders = list(zip(first["pairing"]["positions"], second["pairing"]["positions"], strict=True))
    assert all(sorted(o) == [0, 1] for o in orders)
    again = lockstep.run_block([member("good"), member("good", 12, 2)], timeout_s=30, seed="s", cpu=cpu)
    assert [r.output.info["pairing"]["positions"] for r in again if r.output] == [first["pairing"]["positions"],
                                                                                    second["pairing"]["positions"]]
    # each member's wall time is its share of the block's, so the campaign's clock counts a block once
    assert sum(r.wall_s for r in runs) == pytest.approx(first["pairing"]["block_wall_s"])


def test_the_blocks_cpu_is_the_highest_the_harness_may_use_or_the_one_named(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import bridgebench

    cpus = sorted(os.sched_getaffinity(0))
    monkeypatch.delenv(lockstep.BLOCK_CPU, raising=False)
    assert lockstep.lock_cpu() == (cpus[-1] if len(cpus) > 1 else None)
    monkeypatch.setenv(lockstep.BLOCK_CPU, str(cpus[0]))
    assert lockstep.lock_cpu() == (cpus[0] if len(cpus) > 1 else None)
    for bad in ("x", "-1", str(cpus[-1] + 1)):
        monkeypatch.setenv(lockstep.BLOCK_CPU, bad)
        with pytest.raises(lockstep.CpuError, match=f"BRIDGEBENCH_BLOCK_CPU='{bad}' is not one of the CPUs"):
            lockstep.lock_cpu()
    # the command line: one line and the usage exit, before anything runs
    done = bridgebench("run", str(_study(tmp_path)), "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path,
                       env={lockstep.BLOCK_CPU: "x"})
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith(
        "error: BRIDGEBENCH_BLOCK_CPU='x' is not one of the CPUs"), done.stderr
    assert not (tmp_path / "s.sqlite").exists()  # nothing was built, checked or stored


def test_a_block_stores_what_its_median_round_lasted() -> None:
    # two members of 5 rounds, a turn of one and one of two iterations, each sleeping 20 ms an iteration: every
    # round holds three sleeps, so it lasts at least 60 ms however fast the machine is
    runs = lockstep.run_block([member("good", 5, SLEEP="0.02"), member("good", 10, 2, SLEEP="0.02")],
                              timeout_s=30, seed="s", cpu=lockstep.lock_cpu())
    assert [r.status for r in runs] == [OK, OK], [r.detail for r in runs]
    first, second = (r.output.info["pairing"] for r in runs if r.output)
    assert first["round_s"] == second["round_s"] >= 0.06
    assert first["round_s"] < first["block_wall_s"]  # one round of five, not the block


def test_orders_are_drawn_afresh_every_round() -> None:
    runs = lockstep.run_block([member("good", 40), member("good", 40), member("good", 40)], timeout_s=30, seed=1)
    positions = [r.output.info["pairing"]["positions"] for r in runs if r.output]
    assert len({tuple(p[r] for p in positions) for r in range(40)}) > 1


def _stepped_in(log: Path, interleave: bool) -> tuple[list[str], list[dict]]:
    """The order three members took their iterations in (a and b in turns of 3, c in turns of 1, 4 rounds), and
    their pairing records."""
    members = [member("good", 12, 3, NAME="a", STEPLOG=str(log)), member("good", 12, 3, NAME="b", STEPLOG=str(log)),
               member("good", 4, 1, NAME="c", STEPLOG=str(log))]
    runs = lockstep.run_block(members, timeout_s=30, seed="s", turns=INTERLEAVED if interleave else SEPARATE)
    assert [r.status for r in runs] == [OK, OK, OK], [r.detail for r in runs]
    return log.read_text().split(), [r.output.info["pairing"] for r in runs if r.output]


def _runs(steps: list[str], name: str) -> list[int]:
    """The lengths of the runs of one member's consecutive iterations."""
    out, k = [], 0
    for i, s in enumerate(steps):
        k = k + 1 if s == name else 0
        if k and (i + 1 == len(steps) or steps[i + 1] != name):
            out.append(k)
    return out


def test_interleaved_members_with_equal_turns_take_them_together_one_iteration_each(tmp_path: Path) -> None:
    steps, (a, b, c) = _stepped_in(tmp_path / "interleaved", interleave=True)
    assert len(steps) == 28 and (a["interleaved_with"], b["interleaved_with"], c["interleaved_with"]) == (1, 1, 0)
    assert a["positions"] == b["positions"] != c["positions"]  # a and b are one unit of each round's order
    pairs = []
    for r, position in enumerate(c["positions"]):  # each round: c's one iteration before or after a and b's six
        round_ = steps[7 * r:7 * r + 7]
        assert round_[0 if position == 0 else 6] == "c"
        shared = [s for s in round_ if s != "c"]
        pairs += ["".join(shared[k:k + 2]) for k in range(0, 6, 2)]
    # each of the shared turn's iterations: a and b once each, in an order drawn for each (both orders occur)
    assert set(pairs) == {"ab", "ba"}
    assert max(_runs(steps, "a") + _runs(steps, "b")) <= 2
    # the same seed steps them in the same order again (a resumed campaign follows it)
    assert _stepped_in(tmp_path / "again", interleave=True)[0] == steps
    # separate turns: each member's whole turn of 3 at once (two of a member's turns may meet across rounds)
    separate, records = _stepped_in(tmp_path / "separate", interleave=False)
    assert [r["interleaved_with"] for r in records] == [0, 0, 0]
    assert all(n % 3 == 0 for n in _runs(separate, "a") + _runs(separate, "b"))
    assert sorted(separate) == sorted(steps)


def test_together_every_member_takes_its_turn_at_once_timed_by_its_cpu_time(tmp_path: Path) -> None:
    """Together, the harness says go to every member (leads too) before it waits for any answer: members that
    each wait at every iteration until all have begun it go through, and each iteration stored is the
    member's CPU time, not the wall time it answered (5 s, which the fixture only says)."""
    def meeting(folder: Path, name: str) -> lockstep.Member:
        env = ENV | {"LEVEL": "5", "BARRIER": str(folder), "MEMBERS": "2", "NAME": name}
        return lockstep.Member([sys.executable, str(PROBE), "good", "7"], env, Path.cwd(), 7, 1, 1)

    (tmp_path / "together").mkdir()
    runs = lockstep.run_block([meeting(tmp_path / "together", "a"), meeting(tmp_path / "together", "b")],
                              timeout_s=30, seed=8, cpu=lockstep.lock_cpu(), turns=TOGETHER, step_timeout_s=20)
    assert [r.status for r in runs] == [OK, OK], [r.detail for r in runs]
    for r in runs:
        assert r.output is not None and r.output.info["wall_times"] == [5.0] * 7
        assert len(r.output.times) == 7 and all(0 <= t < 5 for t in r.output.times) and sum(r.output.times) > 0
        assert r.output.info["pairing"]["together"] is True and r.output.info["pairing"]["rounds"] == 6
        assert sorted(r.output.info["pairing"]["positions"][0] for r in runs) == [0, 1]
    # taking turns, the first member told to go waits for a partner that is not told until it has answered
    (tmp_path / "separate").mkdir()
    runs = lockstep.run_block([meeting(tmp_path / "separate", "a"), meeting(tmp_path / "separate", "b")],
                              timeout_s=30, seed=8, step_timeout_s=1)
    assert TIMEOUT in [r.status for r in runs]


def test_twins_take_equal_turns_at_once_the_others_alone_every_one_timed_by_cpu_time(tmp_path: Path) -> None:
    """Twins: the members whose turns are equal (a and b, turns of 3 after a lead of 1) take them, and their
    leads, at the same time (each of their iterations waits until both have begun it, which only a go to both
    before any answer lets through); the member of another turn (c) takes its turn alone between theirs, as
    separate turns do; every one is timed by its CPU time, so that c's ratio to a sets one clock against the
    same clock."""
    log, meet = tmp_path / "steps", tmp_path / "meet"
    meet.mkdir()

    def twin(name: str) -> lockstep.Member:
        env = ENV | {"LEVEL": "5", "BARRIER": str(meet), "MEMBERS": "2", "NAME": name, "STEPLOG": str(log)}
        return lockstep.Member([sys.executable, str(PROBE), "good", "13"], env, Path.cwd(), 13, 3, 1)

    c = member("good", 4, 1, NAME="c", STEPLOG=str(log), LEVEL="2")
    runs = lockstep.run_block([twin("a"), twin("b"), c], timeout_s=30, seed=4, cpu=lockstep.lock_cpu(),
                              step_timeout_s=20, turns=TWINS)
    assert [r.status for r in runs] == [OK, OK, OK], [r.detail for r in runs]
    a, b, alone = (r.output for r in runs if r.output)
    for twin_ in (a, b):
        assert twin_.info["wall_times"] == [5.0] * 13 and twin_.info["pairing"]["together"] is True
        assert all(0 <= t < 5 for t in twin_.times) and sum(twin_.times) > 0
    assert alone.info["wall_times"] == [2.0] * 4 and alone.info["pairing"]["together"] is False
    assert all(0 <= t < 2 for t in alone.times)
    assert a.info["pairing"]["positions"] == b.info["pairing"]["positions"] != alone.info["pairing"]["positions"]
    steps = log.read_text().split()
    assert steps[:2] in (["a", "b"], ["b", "a"])  # the twins' leads, at once, before any round
    for r, position in enumerate(alone.info["pairing"]["positions"]):  # each round: c's turn before or after theirs
        round_ = steps[2 + 7 * r:2 + 7 * r + 7]
        assert round_[0 if position == 0 else 6] == "c" and sorted(round_) == ["a"] * 3 + ["b"] * 3 + ["c"]
    # the same members in separate turns: the first twin told to go waits for one that is not told until it answers
    (tmp_path / "again").mkdir()
    meet = tmp_path / "again"
    runs = lockstep.run_block([twin("a"), twin("b"), c], timeout_s=30, seed=4, step_timeout_s=1, turns=SEPARATE)
    assert TIMEOUT in [r.status for r in runs]


def test_a_solo_twin_also_takes_a_turn_alone_every_round_and_keeps_those_as_its_iterations(tmp_path: Path) -> None:
    """Twins with a solo member (the baseline): a takes its turns of 2 at once with b and, every round, a turn of 2
    alone, drawn among the round's units like one; its execution's iterations are its lead and its turns alone
    (their counters and wall times with them), its turns beside b are kept in its pairing; b and c are as without."""
    log = tmp_path / "steps"

    def named(name: str, iterations: int, turn: int, lead: int, solo: bool = False) -> lockstep.Member:
        env = ENV | {"LEVEL": "1", "INDEXED": "1", "CPU_S": "0.5", "NAME": name, "STEPLOG": str(log)}
        return lockstep.Member([sys.executable, str(PROBE), "good", str(iterations)], env, Path.cwd(), iterations,
                               turn, lead, solo)

    members = [named("a", 1 + 2 * 3 * 2, 2, 1, solo=True), named("b", 1 + 3 * 2, 2, 1), named("c", 3, 1, 0)]
    runs = lockstep.run_block(members, timeout_s=30, seed=5, cpu=lockstep.lock_cpu(), step_timeout_s=20, turns=TWINS)
    assert [r.status for r in runs] == [OK, OK, OK], [r.detail for r in runs]
    a, b, c = (r.output for r in runs if r.output)
    index = [round((t / 0.5 - 1) * 1000) for t in a.times]  # which of a's iterations each kept one was
    twin = [round((t / 0.5 - 1) * 1000) for t in a.info["pairing"]["twin_times"]]
    pairing = a.info["pairing"]
    assert pairing["together"] is True and pairing["rounds"] == 3 and pairing["lead"] == 0 + 1
    expected_alone, expected_twin, k = [0], [], 1
    # a's two turns are never next to each other: c's turn between them in a round, none across two rounds
    rounds = list(zip(pairing["positions"], pairing["solo_positions"], strict=True))
    assert all(abs(t - s) == 2 for t, s in rounds)  # of three units, first and last
    # the unit that ends a round (at 2) begins the next (at 0): a's turn beside b, or a's alone, twice in a row
    assert all((before[0] == 2) == (after[0] == 0) for before, after in itertools.pairwise(rounds))
    for together_at, alone_at in rounds:
        assert together_at != alone_at  # two units of the same round
        turns = [(together_at, expected_twin), (alone_at, expected_alone)]
        for _, into in sorted(turns, key=lambda x: x[0]):
            into += [k, k + 1]
            k += 2
    assert (index, twin) == (expected_alone, expected_twin)
    assert len(a.counters["cpu_s"]) == len(a.info["wall_times"]) == 7
    assert a.info["wall_times"] == [1 + i / 1000 for i in index]
    assert len(b.times) == 7 and "twin_times" not in b.info["pairing"] and b.info["pairing"]["together"] is True
    assert len(c.times) == 3 and c.info["pairing"]["together"] is False
    # each round, one turn of a alone: in the log, a's lines outnumber b's by the turn in every round
    steps = log.read_text().split()
    assert steps.count("a") == 13 and steps.count("b") == 7 and steps.count("c") == 3
    with pytest.raises(ValueError, match="only twins and interleaved turns take a turn alone"):
        lockstep.run_block(members, timeout_s=30, seed=5, turns=SEPARATE)


def test_an_interleaved_solo_twin_takes_a_turn_alone_too_and_its_twin_iterations_alternate_with_the_twins(
        tmp_path: Path) -> None:
    """Interleaved with a solo member (the baseline): a and b (marked at once, turns of 2 after a lead of 1) take
    their turns one iteration each, a's and b's next to each other; every round a also takes a turn of 2 alone and
    c (turns of 1) its own; a's execution keeps its lead and its turns alone, its iterations beside b go to its
    pairing, in order; on the wall clock (no CPU time is asked for)."""
    log = tmp_path / "steps"

    def named(name: str, iterations: int, turn: int, lead: int, solo: bool = False, at_once: bool = False
              ) -> lockstep.Member:
        env = ENV | {"LEVEL": "1", "INDEXED": "1", "NAME": name, "STEPLOG": str(log)}
        return lockstep.Member([sys.executable, str(PROBE), "good", str(iterations)], env, Path.cwd(), iterations,
                               turn, lead, solo, at_once)

    members = [named("a", 1 + 2 * 3 * 2, 2, 1, solo=True, at_once=True), named("b", 1 + 3 * 2, 2, 1, at_once=True),
               named("c", 3, 1, 0)]
    runs = lockstep.run_block(members, timeout_s=30, seed=5, cpu=lockstep.lock_cpu(), step_timeout_s=20,
                              turns=INTERLEAVED)
    assert [r.status for r in runs] == [OK, OK, OK], [r.detail for r in runs]
    a, b, c = (r.output for r in runs if r.output)
    index = [round((t - 1) * 1000) for t in a.times]  # which of a's iterations each kept one was
    twin = [round((t - 1) * 1000) for t in a.info["pairing"]["twin_times"]]
    pairing = a.info["pairing"]
    assert pairing["interleaved_with"] == 1 and pairing["together"] is False and pairing["rounds"] == 3
    expected_alone, expected_twin, k = [0], [], 1
    rounds = list(zip(pairing["positions"], pairing["solo_positions"], strict=True))
    assert all(abs(t - s) == 2 for t, s in rounds)  # a's two turns never next to each other: c's between them
    for beside_at, alone_at in rounds:
        for _, into in sorted([(beside_at, expected_twin), (alone_at, expected_alone)], key=lambda x: x[0]):
            into += [k, k + 1]
            k += 2
    assert (index, twin) == (expected_alone, expected_twin)
    assert len(b.times) == 7 and "twin_times" not in b.info["pairing"] and b.info["pairing"]["interleaved_with"] == 1
    assert len(c.times) == 3 and c.info["pairing"]["interleaved_with"] == 0
    # the log: the leads one after another, then each round's units; a's turn beside b alternates a and b
    steps = log.read_text().split()
    assert steps.count("a") == 13 and steps.count("b") == 7 and steps.count("c") == 3
    assert steps[:2] == ["a", "b"]  # the leads, one member after another
    rest = steps[2:]
    for r, (beside_at, alone_at) in enumerate(rounds):
        round_ = rest[7 * r:7 * r + 7]  # a's turn beside b (4 steps), a's alone (2), c's (1), in the drawn order
        units = {beside_at: 4, alone_at: 2, 3 - beside_at - alone_at: 1}
        at = 0
        for u in sorted(units):
            part = round_[at:at + units[u]]
            at += units[u]
            if u == beside_at:
                assert sorted(part[:2]) == sorted(part[2:]) == ["a", "b"]  # one iteration each, twice
            else:
                assert part == (["a", "a"] if u == alone_at else ["c"])


@pytest.mark.parametrize("turns", [SEPARATE, TOGETHER, TWINS])
@pytest.mark.parametrize(("behaviour", "status", "reason"), [
    ("chatty", PROTOCOL, "printed while it was not its turn"),
    ("dies", CRASHED, "ended mid-block"),
    ("garbage", PROTOCOL, "answered iteration 1 with 'hello'"),
    ("liar", PROTOCOL, "differ from the times it answered"),
    ("batch", PROTOCOL, lockstep.NOT_STEPPED),
])
def test_a_member_that_breaks_the_protocol_fails_with_its_reason_and_the_others_go_on(
        behaviour: str, status: str, reason: str, turns: str) -> None:
    bad, *good = lockstep.run_block([member(behaviour), member("good"), member("good")], timeout_s=30, seed=2,
                                    turns=turns)
    assert bad.status == status and reason in bad.detail, bad.detail
    assert all(g.status == OK and g.output is not None and len(g.output.times) == 6 for g in good)


@pytest.mark.parametrize("turns", [SEPARATE, TOGETHER, TWINS])
def test_a_member_that_answers_too_late_is_killed_and_the_block_goes_on(tmp_path: Path, turns: str) -> None:
    termed = tmp_path / "termed"
    late, *good = lockstep.run_block([member("late", TERMED=str(termed)), member("good"), member("good")],
                                     timeout_s=30, seed=3, step_timeout_s=5, turns=turns)
    assert late.status == TIMEOUT and "no answer to iteration 2 within 5 s" in late.detail
    assert [g.status for g in good] == [OK, OK]
    assert termed.read_text() == "SIGTERM"  # asked to stop first (a GT.M client then runs its database down)


@pytest.mark.parametrize("turns", [SEPARATE, TOGETHER, TWINS])
def test_the_last_member_left_of_a_block_is_stopped_not_stepped_alone(turns: str) -> None:
    """Stepped alone a process runs in another regime (methodology §13): once its partners have all ended,
    the survivor is stopped with the reason, not left to add iterations unlike its paired ones."""
    dead, alone = lockstep.run_block([member("dies"), member("good")], timeout_s=30, seed=5, turns=turns)
    assert dead.status == CRASHED
    assert alone.status == ABANDONED and alone.output is None
    assert "stopped before round 4" in alone.detail and "crashed" in alone.detail


def test_a_member_that_cannot_start_is_an_error_with_its_reason() -> None:
    gone = lockstep.Member(["/nonexistent/probe"], ENV, Path.cwd(), 4)
    bad, *good = lockstep.run_block([gone, member("good", 4), member("good", 4)], timeout_s=30, seed=4)
    assert bad.status != OK and [g.status for g in good] == [OK, OK]


def test_a_block_records_the_threads_and_processes_each_member_had() -> None:
    """The report names the mechanisms whose threads shared the block's CPU: the harness counts each
    member's processes and threads under its launcher once it is ready and after its last turn."""
    threaded, single = lockstep.run_block([member("threads"), member("good")], timeout_s=30, seed=7)
    assert threaded.status == single.status == OK, (threaded.detail, single.detail)
    assert threaded.output is not None and single.output is not None
    many, one = threaded.output.info["pairing"], single.output.info["pairing"]
    assert (many["processes"], one["processes"], one["threads"]) == (2, 1, 1)
    assert many["threads"] >= 4  # its own three and its child's one


def test_turns_give_a_round_similar_time() -> None:
    assert lockstep.turns([5, 50, 50]) == (5, [1, 10, 10])
    assert lockstep.turns([50, 50]) == (50, [1, 1])
    # rounded up: never fewer iterations than sized (50 beside 8 would be 6 turns of 8, 48: too few to classify)
    assert lockstep.turns([8, 50]) == (8, [1, 7]) and lockstep.turns([8, 21, 50]) == (8, [1, 3, 7])
    # like with like: members sized within SAME_TURN of the fewest take one iteration a turn, as many rounds as
    # the most of them was sized to (twins sized 11 and 22 by noise took turns of 1 and 2, and their ratio
    # carried a turn's slow first iteration: methodology §13)
    assert lockstep.turns([40, 50]) == (50, [1, 1])
    assert lockstep.turns([11, 22, 50]) == (22, [1, 1, 3])
    assert lockstep.turns([5, 9, 11, 50]) == (11, [1, 1, 1, 5])
    assert lockstep.turns([0, 3]) == (1, [1, 3])  # at least one round, as before the rule
    # together there is no first iteration to match: turns as long as each other, so that none runs alone
    assert lockstep.turns([11, 22, 50], like_with_like=False) == (11, [1, 2, 5])
    assert lockstep.turns([10, 20], like_with_like=False) == (10, [1, 2])
    with pytest.raises(ValueError):
        lockstep.run_block([member("good", 5, 2)], timeout_s=5, seed=0)


def test_timed_turns_last_alike_whatever_the_iteration() -> None:
    # json's later block here: LuaJIT and luajit2 15 ms an iteration, PUC Lua 31 and 25 ms, the JIT off 17 ms, each
    # sized to about 150 ms: turns of about 100 ms (7, 7, 3, 4, 6 iterations), two rounds so that none makes fewer
    json_s = [0.0148, 0.0146, 0.0309, 0.0249, 0.0170]
    assert lockstep.timed_turns([10, 10, 5, 6, 9], json_s, 0.1) == (2, [7, 7, 3, 4, 6])
    # an iteration longer than the turn is a turn of its own; the other side's turn lasts the turn time, and the
    # rounds are as many as the interpreter's iterations (spectralnorm: PUC Lua 481 ms, LuaJIT 11 ms)
    assert lockstep.timed_turns([3, 10], [0.481, 0.0112], 0.1) == (3, [1, 9])
    # twins whose estimates fall either side of a rounding take one length, the longer (14 % apart otherwise)
    assert lockstep.timed_turns([10, 10], [0.0142, 0.0154], 0.1) == (2, [7, 7])
    assert lockstep.timed_turns([10, 10], [0.0130, 0.0154], 0.1) == (2, [8, 6])  # 18 % apart: each its own
    assert lockstep.timed_turns([0, 0], [0.01, 0.01], 0.1) == (1, [10, 10])  # at least one round
    for seconds, turn_s in (([0.01], 0.1), ([0.01, 0.0], 0.1), ([0.01, 0.02], 0.0)):
        with pytest.raises(ValueError):
            lockstep.timed_turns([5, 5], seconds, turn_s)


def test_timed_turns_anchored_to_the_baseline_last_as_long_as_its_turn_really_does() -> None:
    # havlak at 02:27's speed: LuaJIT 20.4 ms, luajit2 18.3 ms (11 % apart: not twins). Each rounded to 50 ms on its own
    # falls either side of 2.5 iterations (2 and 3: 41 against 55 ms); to LuaJIT's 41 ms luajit2 takes 2 (37 ms)
    havlak = [0.0204, 0.0183]
    assert lockstep.timed_turns([10, 10], havlak, 0.05)[1] == [2, 3]
    assert lockstep.timed_turns([10, 10], havlak, 0.05, anchor=0) == (5, [2, 2])
    # the anchor's own turn is still the whole iterations nearest turn_s, and an interpreter's longer iteration a turn
    assert lockstep.timed_turns([10, 10, 2], [0.0130, 0.0154, 0.3], 0.1, anchor=0) == (2, [8, 7, 1])
    assert lockstep.timed_turns([10, 10, 2], [0.0130, 0.0154, 0.3], 0.1, anchor=1) == (2, [7, 6, 1])
    # the anchor's twin takes the anchor's turn, where rounding to its time would give it one more (6 s / 0.92 s)
    assert lockstep.timed_turns([12, 12], [0.92, 1.0], 6.0)[1] == [7, 7]  # unanchored: the longest of the twins'
    assert lockstep.timed_turns([12, 12], [0.92, 1.0], 6.0, anchor=1)[1] == [6, 6]
    # twins beside an anchor take one length, the longest of theirs (interpreters: 2.6 and 2.4 iterations of 50 ms)
    assert lockstep.timed_turns([9, 9, 9], [0.0167, 0.0192, 0.0208], 0.05, anchor=0)[1] == [3, 3, 3]
    # a copy of a member's VM takes its turn whatever the estimates say (havlak's A/A, 2026-11-29: 14.0 and 16.2 ms),
    # the anchor's or another's (an interpreter's copy beside it: 2 iterations of 30 ms, 1 of 40)
    seconds = [0.0140, 0.0162, 0.030, 0.040]
    assert lockstep.timed_turns([10] * 4, seconds, 0.05, anchor=0)[1] == [4, 3, 2, 1]
    assert lockstep.timed_turns([10] * 4, seconds, 0.05, anchor=0, copy_of={1: 0, 3: 2})[1] == [4, 4, 2, 2]
    for anchor, copy_of in ((2, None), (-1, None), (0, {2: 0}), (0, {1: 1}), (None, {0: 1, 1: 0})):
        with pytest.raises(ValueError):
            lockstep.timed_turns([5, 5], [0.01, 0.01], 0.1, anchor, copy_of)


def test_a_lead_runs_before_the_rounds_unpaired_and_is_stored() -> None:
    runs = lockstep.run_block([lockstep.Member([sys.executable, str(PROBE), "good", "7"], ENV, Path.cwd(), 7, 2, 1),
                               member("good", 3)], timeout_s=30, seed="lead")
    assert [r.status for r in runs] == [OK, OK], [r.detail for r in runs]
    led, other = (r.output.info["pairing"] for r in runs if r.output)
    assert (led["lead"], led["turn"], led["rounds"], other["lead"]) == (1, 2, 3, 0)
    assert len(led["positions"]) == len(other["positions"]) == 3
    with pytest.raises(ValueError):  # after its lead, a member's iterations must be whole turns
        lockstep.run_block([lockstep.Member(["true"], ENV, Path.cwd(), 6, 2, 1), member("good", 3)], timeout_s=5,
                           seed=0)


def test_the_drawn_layout_reaches_the_probe() -> None:
    drawn = layout.draw()
    run = lockstep.run_block([lockstep.Member([sys.executable, str(PROBE), "good", "2"],
                                              layout.applied(ENV, drawn), Path.cwd(), 2)], timeout_s=30, seed=0)[0]
    assert run.output is not None
    assert run.output.info["heap_pad"] == str(drawn["heap_pad"]) and run.output.info["env_pad"] == drawn["env_pad"]
    assert all(0 <= v < layout.MAX_PAD for v in drawn.values())


@pytest.fixture(scope="module")
def c_probes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("c-probes")
    for name in ("planted", "constant", "chase"):
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out / name),
                        str(REPO / "probes" / "c" / f"{name}.c")], check=True)
    return out


def test_the_c_probes_speak_the_stepped_mode(c_probes: Path) -> None:
    runs = lockstep.run_block([lockstep.Member([str(c_probes / "planted"), "8", "1000"], ENV, Path.cwd(), 8),
                               lockstep.Member([str(c_probes / "constant"), "8", "2"], ENV, Path.cwd(), 8),
                               lockstep.Member([str(c_probes / "chase"), "8", "65536", "100"], ENV, Path.cwd(), 8)],
                              timeout_s=30, seed=5)
    assert [r.status for r in runs] == [OK, OK, OK], [r.detail for r in runs]


def test_together_the_c_probes_are_timed_by_their_own_cpu_clock_or_the_harnesss(c_probes: Path) -> None:
    """planted.c reports its CPU time around each timed call (cpu_s): together, that is what is stored; constant.c
    does not, and the harness's readings are."""
    runs = lockstep.run_block([lockstep.Member([str(c_probes / "planted"), "8", "1000"], ENV, Path.cwd(), 8),
                               lockstep.Member([str(c_probes / "constant"), "8", "2"], ENV, Path.cwd(), 8)],
                              timeout_s=30, seed=5, cpu=lockstep.lock_cpu(), turns=TOGETHER)
    assert [r.status for r in runs] == [OK, OK], [r.detail for r in runs]
    planted, constant = (r.output for r in runs)
    assert planted is not None and constant is not None
    assert planted.info["cpu_from"] == PROBE_CPU and planted.times == planted.counters["cpu_s"]
    assert constant.info["cpu_from"] == HARNESS_CPU and len(constant.times) == 8
    assert all(t >= 0 for t in constant.times) and constant.times != constant.info["wall_times"]


def test_a_together_members_last_iteration_comes_from_its_whole_cpu_time_when_it_ended_first() -> None:
    """A probe without a cpu_s counter that exits before the harness reads its last iteration: the rest of its
    CPU time (the launcher's usage) is that iteration's, exit included; without it, or with nothing that adds
    up, the execution fails with the reason."""
    live = stepped.Live(lockstep.Member(["probe"], ENV, Path.cwd(), 3), None, "", cpu=[0.5, 0.5], cpu_at=1.25)
    assert cpu_times(live, None, {"user_s": 1.5, "sys_s": 0.25}) == ([0.5, 0.5, 0.5], HARNESS_CPU)
    assert cpu_times(live, [0.1, 0.2, 0.3], {}) == ([0.1, 0.2, 0.3], PROBE_CPU)
    for counter, usage in ((None, {}), ([0.1, 0.2], {}), (None, {"user_s": 1.0, "sys_s": 0.0})):
        times, why = cpu_times(live, counter, usage)
        assert times is None and "could not be read" in why
    # a member of two processes (an RPC plugin's client and server): the probe's clock sees only its own process
    live.pids = [101, 102]
    assert cpu_times(live, [0.1, 0.2, 0.3], {"user_s": 1.5, "sys_s": 0.25}) == ([0.5, 0.5, 0.5], HARNESS_CPU)


@pytest.mark.parametrize("together", [False, True])
@pytest.mark.parametrize("lua", ["lua5.1", "lua5.4", "luajit"])
def test_the_lua_probe_speaks_the_stepped_mode_and_pads_its_heap(lua: str, together: bool, tmp_path: Path) -> None:
    if shutil.which(lua) is None or shutil.which("cc") is None:
        pytest.skip(f"{lua} is not installed")
    include = {"lua5.1": "/usr/include/lua5.1", "lua5.4": "/usr/include/lua5.4", "luajit": "/usr/include/luajit-2.1"}
    if not Path(include[lua]).is_dir():
        pytest.skip(f"no headers for {lua}")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{include[lua]}", str(REPO / "probes" / "lua" / "bbclock.c"),
                    "-o", str(tmp_path / "bbclock.so")], check=True)
    bench = tmp_path / "bench.lua"
    bench.write_text("return {run = function(n) local s = 0 for i = 1, n do s = s + i end return tostring(s) end}\n")
    env = ENV | {"LUA_CPATH": f"{tmp_path}/?.so", "LUA_PATH": "", "BRIDGEBENCH_HEAP_PAD": "333"}
    argv = [lua, str(REPO / "probes" / "lua" / "probe.lua"), str(bench), "6", "1000"]
    runs = lockstep.run_block([lockstep.Member(argv, env, tmp_path, 6), lockstep.Member(argv, env, tmp_path, 6)],
                              timeout_s=30, seed=6, turns=TOGETHER if together else SEPARATE)
    assert [r.status for r in runs] == [OK, OK], [r.detail for r in runs]
    assert runs[0].output is not None and runs[0].output.info["heap_pad"] == 333
    if together:  # its own CPU clock around each timed call
        assert runs[0].output.info["cpu_from"] == PROBE_CPU
        assert runs[0].output.times == runs[0].output.counters["cpu_s"]


# --- the estimator, against planted truth ------------------------------------------------------------
@pytest.mark.parametrize("truth", [1.0, 1.02])
def test_lockstep_intervals_cover_the_planted_ratio_at_their_nominal_rate(truth: float) -> None:
    rng = np.random.default_rng(7)
    reps = 2000
    covered = sum(lockstep_ratio(planted_blocks(rng, truth, 5)).holds(truth) for _ in range(reps))
    # 99 % nominal: 1980 expected; 1960 is 4.5 binomial sd below it
    assert covered >= 1960, covered


@pytest.mark.parametrize("truth", [1.0, 1.02])
def test_lockstep_intervals_cover_the_truth_when_processes_fall_into_speed_modes(truth: float) -> None:
    # each process 0 % or 6 % slower at even odds: 5 blocks cover at the nominal rate (3 blocks do not: all
    # three may agree by chance, about 3 % of the time, and give an interval far too narrow; methodology §13)
    rng = np.random.default_rng(11)
    covered = sum(lockstep_ratio(planted_blocks(rng, truth, 5, process_sd=0.0, mode=0.06)).holds(truth)
                  for _ in range(2000))
    assert covered >= 1960, covered


def test_lockstep_cancels_the_steps_a_round_shares() -> None:
    rng = np.random.default_rng(8)
    estimate = lockstep_ratio(planted_blocks(rng, 1.02, 5, process_sd=0.002))
    assert estimate.method == LOCKSTEP_METHOD and estimate.executions == 5
    assert estimate.low is not None and estimate.high is not None
    assert 1.0 < estimate.low < 1.02 < estimate.high < 1.04  # steps of 50 % gone: +2 % decided
    within, between, _ = spread(planted_blocks(rng, 1.0, 5))
    assert within is not None and between is not None and within < 0.01


@pytest.mark.parametrize(("noise", "modes", "share"), [(0.05, 0.0, 1.0), (0.05, 0.05 / math.sqrt(10), 0.5),
                                                         (0.001, 0.05, 0.0)])
def test_the_share_within_is_the_noise_within_blocks_over_the_spread_between(noise: float, modes: float,
                                                                          share: float) -> None:
    """Planted: each block's processes differ by a drawn shift of sd `modes`, each of its 10 rounds adds noise of
    sd `noise`; a block's mean then carries noise²/10 of variance, and the share within is that over the whole."""
    rng = np.random.default_rng(3)
    blocks = [([1.0] * 10, list(np.exp(rng.normal(0, modes) + rng.normal(0, noise, 10)))) for _ in range(400)]
    assert spread(blocks).share == pytest.approx(share, abs=0.1)
    assert spread(blocks).within == pytest.approx(noise, rel=0.1)
    assert spread(blocks[:1]).share is None  # one block: no spread between
    # a campaign's first blocks take one-iteration turns, noisier a round than its later blocks' longer turns: each
    # block's own noise counts for it (pooled over every round, the first blocks' would pass for the later ones')
    first = [([1.0] * 50, list(np.exp(rng.normal(0, 0.05) + rng.normal(0, 0.2, 50)))) for _ in range(3)]
    later = [([1.0] * 4, list(np.exp(rng.normal(0, 0.05) + rng.normal(0, 0.02, 4)))) for _ in range(60)]
    assert spread(first + later).share < 0.2
    # and so for the sd within: each block's variance counts once (√((3·0.2² + 60·0.02²)/63) ≈ 0.048), where the
    # rounds pooled would give about 0.135
    assert spread(first + later).within < 0.07
    assert spread([([1.0, 1.0], [2.0, 2.0])] * 3).share is None  # blocks alike: no spread between to share


def test_fewer_than_three_blocks_give_an_estimate_and_no_interval() -> None:
    estimate = lockstep_ratio([([1.0, 1.0], [2.0, 2.0]), ([1.0], [2.0])])
    assert estimate.method == TOO_FEW and not estimate.has_interval and math.isclose(estimate.value, 2.0)
    with pytest.raises(ValueError):
        lockstep_ratio([([1.0], [0.0])])


def test_a_blocks_value_is_its_rounds_mean_log_ratio_and_only_positive_numbers_give_one() -> None:
    assert math.isclose(block_log_ratio([1.0, 2.0], [2.0, 8.0]), (math.log(2) + math.log(4)) / 2)
    assert math.isclose(block_log_ratio(np.array([0.5]), np.array([0.55])), math.log(1.1))  # arrays as lists
    for bad in (0.0, -1.0, math.nan, math.inf):
        for a, b in (([1.0, bad], [1.0, 1.0]), ([1.0, 1.0], [bad, 1.0])):
            with pytest.raises(ValueError, match="not a positive number"):
                block_log_ratio(a, b)
    for a, b in (([1.0], [1.0, 2.0]), ([], [])):
        with pytest.raises(ValueError, match="the same rounds on both sides"):
            block_log_ratio(a, b)


def test_a_turn_of_no_time_counts_for_no_ratio() -> None:
    """A zero (a coarse clock, a CPU time read before the scheduler booked it) has no log ratio: its round is
    left out of the block's value, as a round that was not steady, instead of failing the analysis."""
    from bridgebench.timing.analysis import steady_rounds
    from bridgebench.timing.result import Run

    run = Run(1, 0, 6, 1, None, None, None, None, None, (), (), ((0, 6),), (), None, {}, block="x", turn=2)
    (side,) = steady_rounds([run], [np.array([1.0, 1.0, 0.0, 0.0, 2.0, 2.0])]).values()
    assert side.turns == {0: 1.0, 2: 2.0}


@pytest.mark.parametrize("way", ["together", "interleaved"])
def test_a_solo_baselines_twin_is_set_against_its_turns_beside_it_and_the_others_against_its_turns_alone(
        way: str) -> None:
    """Planted: the baseline took 1.0 s an iteration alone and 1.1 beside its twin (what sharing the CPU, or
    following the twin's iterations, cost it), its twin 1.1 beside it, the interpreter 3.0 alone. The twin's ratio
    is 1 (both beside each other), the interpreter's 3 (both alone), in every round where the baseline's turns alone
    were steady; an old block's baseline (no turns alone kept) is set against every member as it was."""
    from bridgebench.timing.analysis import lockstep_blocks, steady_rounds
    from bridgebench.timing.result import Run

    def run(times: int, twin: tuple[float, ...] = (), together: bool = False, steady: int = 0) -> Run:
        beside = {way: together}  # twins at once, or interleaved one iteration each
        return Run(1, 0, times, 1, None, None, None, None, None, (), (), ((steady, times),), (), None, {}, block="x",
                   turn=2, lead=1, twin_times=twin, **beside)

    base = steady_rounds([run(7, (1.1,) * 6, together=True, steady=3)], [np.array([9.0] + [1.0] * 6)])
    twin = steady_rounds([run(7, together=True)], [np.array([9.0] + [1.1] * 6)])
    other = steady_rounds([run(4)], [np.array([9.0, 3.0, 3.0, 3.0])])
    other = {0: other[0]._replace(turn=1, turns={0: 3.0, 1: 3.0, 2: 3.0})}
    assert base[0].twin_turns == {1: pytest.approx(1.1), 2: pytest.approx(1.1)}  # round 0's turn alone not steady
    assert lockstep_blocks(base, twin) == {"x": ([pytest.approx(1.1)] * 2, [pytest.approx(1.1)] * 2)}
    assert lockstep_blocks(twin, base) == {"x": ([pytest.approx(1.1)] * 2, [pytest.approx(1.1)] * 2)}
    assert lockstep_blocks(base, other) == {"x": ([1.0, 1.0], [3.0, 3.0])}
    old = steady_rounds([run(7, together=True)], [np.array([9.0] + [1.1] * 6)])
    assert lockstep_blocks(old, other) == {"x": ([pytest.approx(1.1)] * 3, [3.0] * 3)}


# --- a campaign: paired where the probes speak the stepped mode, alone where they do not ------------------
ONE_BENCHMARK = "\n[benchmarks.one]\nparam = 1\ncheck_param = 1\n"
STUDY = """
[study]
name = "stepping"
baseline = "a"

[budget]
process_executions = 3
iterations = 6
timeout_s = 30

""" + stepped_mechanism("a", 'LEVEL = "0.001"') + stepped_mechanism("b", 'LEVEL = "0.002"', "threads") \
    + stepped_mechanism("c", 'LEVEL = "0.003"', "batch") + ONE_BENCHMARK


def _study(tmp_path: Path) -> Path:
    return stepped_study(tmp_path, "stepping", STUDY)


def test_a_campaign_pairs_in_lock_step_by_default_and_says_which_cells_were_not(tmp_path: Path) -> None:
    import json

    from tests.conftest import bridgebench, rows

    study = _study(tmp_path)
    done = bridgebench("run", str(study), "--json", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "s.sqlite"
    assert dict(rows(db, "SELECT mechanism, stepped FROM check_answer")) == {"a": 1, "b": 1, "c": 0}
    pairing: dict[str, list[dict | None]] = {}
    for mechanism, info in rows(db, "SELECT mechanism, info_json FROM execution ORDER BY pexec"):
        stored = json.loads(info)
        pairing.setdefault(mechanism, []).append(stored.get("pairing"))
        assert 0 <= stored["layout"]["env_pad"] < layout.MAX_PAD  # every execution drew its layout
    assert pairing["c"] == [None, None, None]  # its probe has no stepped mode: it ran alone
    assert [p["block"] for p in pairing["a"] if p] == [p["block"] for p in pairing["b"] if p]
    assert len({p["block"] for p in pairing["a"] if p}) == 3
    result = json.loads(done.stdout)
    ratios = {c["mechanism"]: c["ratio"] for c in result["cells"] if c["ratio"]}
    assert ratios["b"]["method"] == LOCKSTEP_METHOD and ratios["b"]["value"] == pytest.approx(2.0)
    assert ratios["c"]["method"] != LOCKSTEP_METHOD and ratios["c"]["value"] == pytest.approx(3.0)
    spreads = {c["mechanism"]: (c["ratio_within_sd"], c["ratio_between_sd"]) for c in result["cells"]}
    assert spreads["b"] == (pytest.approx(0.0), pytest.approx(0.0)) and spreads["c"] == (None, None)
    assert {c["mechanism"]: c["ratio_turns"] for c in result["cells"]} == {"a": [[1, 1]], "b": [[1, 1]], "c": []}
    lasted = {c["mechanism"]: c["ratio_round_s"] for c in result["cells"]}
    assert lasted["b"] > 0 and lasted["c"] is None  # what a round lasted, where the ratio is one of blocks
    markdown = next((tmp_path / "results").glob("stepping-*.md")).read_text()
    # b's turns are as long as a's (one iteration) and its iterations twice as long: it pays a turn's cost unlike a
    assert "1 of these ratios compares sides whose turns took unlike times" in markdown
    assert "## Lock-step blocks" in markdown and "not paired, their probes have no stepped mode: c" in markdown
    assert "methodology §13): b (up to " in markdown and "sharing the block's one CPU" in markdown  # a: one thread
    assert "threads in 2 processes)" in markdown and "threads: a" not in markdown
    # 3 blocks: two even speed modes would be drawn alike by all of them in a quarter of campaigns
    assert ("Of these intervals, 1 rests on fewer than 8 blocks (the fewest: 3)" in markdown
            and "3 blocks all draw alike in 25% of campaigns" in markdown)
    analysed = current_analysis(Store(str(db), create=False), result["campaign"]["id"])
    # blocks of one round have no spread within: the ratio keeps its row, with "—" there
    one_round = tuple(replace(c, ratio_within_sd=None) if c.mechanism == "b" else c for c in analysed.cells)
    assert [r[-3:] for r in tables.pairing_rows(replace(analysed, cells=one_round))] == [("—", "0.00%", "—")]
    # blocks alike have no spread between them to share: no share within, and no line; a share past 100 % (both
    # variances estimated) is all of it
    assert {c.mechanism: c.ratio_within_share for c in analysed.cells}["b"] is None
    assert tables.within_line(analysed) is None
    noisy = replace(analysed, cells=tuple(replace(c, ratio_within_share=1.3) if c.mechanism == "b" else c
                                          for c in analysed.cells))
    assert tables.pairing_rows(noisy)[0][-1] == "100%"
    assert f"each mechanism's ratios: {analysed.label('b')} 100%. That noise is" in (tables.within_line(noisy) or "")
    eight = tuple(replace(c, ratio=replace(c.ratio, executions=8)) if c.ratio else c for c in analysed.cells)
    assert tables.modes_note(replace(analysed, cells=eight)) is None
    # the turns note: where a turn's cost (2.5 ms) would be shares of b's and a's turns more than 1 % apart. As if
    # a's iterations took 15 ms (LuaJIT's json): b's within 5 % of them in turns alike is nothing to say (16.7 %
    # against 15.9 %), 10 % apart is; PUC Lua's json (×2.09) in turns of one is (8.8 % apart), in turns of about
    # 100 ms each (7:3) not; spectralnorm's interpreter (×43, 481 ms) beside turns of 9 × 11.2 ms is (2.0 % apart)
    for base_s, turns, value, said in ((0.015, (1, 1), 1.05, None), (0.015, (1, 1), 0.95, None),
                                       (0.015, (1, 1), 1.1, "1 of these"), (0.015, (1, 1), 0.9, "1 of these"),
                                       (0.015, (1, 1), 2.09, "1 of these"), (0.015, (7, 3), 2.09, None),
                                       (0.0112, (9, 1), 43.0, "1 of these")):
        cells = tuple(replace(c, ratio=replace(c.ratio, value=value), ratio_turns=(turns,)) if c.mechanism == "b"
                      else replace(c, steady_performance=replace(c.steady_performance, value=base_s))
                      if c.mechanism == "a" else c for c in analysed.cells)
        note = tables.turns_note(replace(analysed, cells=cells))
        assert (note if said is None else note[:len(said)]) == said, (base_s, turns, value, note)

    sequential = bridgebench("run", str(study), "--json", "--pairing", "sequential", "--layout", "fixed",
                             "--store", str(tmp_path / "t.sqlite"), cwd=tmp_path)
    assert sequential.returncode == 0, sequential.stderr
    infos = [json.loads(i) for (i,) in rows(tmp_path / "t.sqlite", "SELECT info_json FROM execution")]
    assert all("pairing" not in i and "layout" not in i for i in infos)


LEADS = """
[study]
name = "leads"
baseline = "jit"

[budget]
process_executions = 3
iterations = 60
execution_s = 0.03
min_iterations = 5
until_ci = 0.0001
max_process_executions = 5
max_time_s = 600
later_steady = 6

""" + stepped_mechanism("jit", 'LEVEL = "0.001", WARMUP = "4", FACTORS = "1.0,1.1,1.2", COUNTER = "{study}/count-jit"',
                           first="min_iterations = 60\n") \
    + stepped_mechanism("interp", 'LEVEL = "0.01", FIRST = "0.5", FACTORS = "1.0,1.1,1.2", '
                        'COUNTER = "{study}/count-interp"') + ONE_BENCHMARK


def test_later_blocks_lead_with_what_is_not_steady_and_pair_only_steady_turns(tmp_path: Path) -> None:
    import json

    from tests.conftest import bridgebench

    study = stepped_study(tmp_path, "leads", LEADS)
    done = bridgebench("run", str(study), "--json", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    cells = {c["mechanism"]: c for c in result["cells"]}
    jit = {r["pexec"]: r for r in cells["jit"]["per_execution"]}
    interp = {r["pexec"]: r for r in cells["interp"]["per_execution"]}
    assert len(jit) == len(interp) == 5
    # the first blocks: the cells' own sizes (the interpreter's least, 5 iterations of 10 ms; the JIT's 60, 5
    # turns of 12), no lead; the JIT's classified (steady from its 5th), the interpreter's from its 2nd
    assert {(jit[p]["iterations"], jit[p]["lead"], interp[p]["iterations"], interp[p]["lead"])
            for p in range(3)} == {(60, 0, 5, 0)}
    assert all(jit[p]["kind"] == "warmup" and jit[p]["steady_iteration"] == 5 for p in range(3))
    assert all(interp[p]["kind"] is None and interp[p]["steady_ranges"] == [[1, 5]] for p in range(3))
    # later: the JIT leads with its warm-up and makes 6 more, the interpreter leads with its first iteration
    # and makes as many as take as long as those 6 (6 ms: fewer than the least, 2), in 2 rounds of turns
    for p in (3, 4):
        assert (jit[p]["iterations"], jit[p]["lead"], jit[p]["turn"]) == (10, 4, 3), jit[p]
        assert (interp[p]["iterations"], interp[p]["lead"], interp[p]["turn"]) == (3, 1, 1), interp[p]
        assert interp[p]["steady_ranges"] == [[1, 3]]
    # the first iteration (half as long) is in no number: every execution's mean is its level
    levels = [r["steady_mean"] / 0.01 for r in interp.values()]
    assert all(any(x == pytest.approx(k) for k in (1.0, 1.1, 1.2)) for x in levels), levels
    ratio = cells["interp"]["ratio"]
    assert ratio["method"] == LOCKSTEP_METHOD and 10 / 1.2 - 1e-9 <= ratio["value"] <= 10 * 1.2 + 1e-9
    assert ratio["executions"] == 5  # every block, the short ones too, paired steady turns
    md = bridgebench("report", "--format", "markdown", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path).stdout
    # the baseline took turns of 12 and then 3 iterations, the interpreter of one: the report says so, and what
    # such a ratio is a ratio of (a turn's first iteration is paid on every one of the interpreter's)
    assert cells["interp"]["ratio_turns"] == [[3, 1], [12, 1]]
    assert cells["interp"]["ratio_later_turns"] == [[3, 1]]  # the blocks after the first 3
    assert "| 3:1, 12:1 |" in md and "1 of these ratios compares sides whose turns took unlike times" in md
    assert "only the first" not in md  # its later blocks' turns (3:1) are unlike too
    # evidence/turn_first.py reads the same store: the fixture's turns have no slow first iteration (its times
    # are fixed), and the pair's three readings are there, the last from no block (the interpreter's turn is one)
    read = subprocess.run([sys.executable, str(REPO / "evidence" / "turn_first.py"), str(tmp_path / "s.sqlite"),
                           "--pair", "jit:interp"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert read.returncode == 0, read.stderr
    penalty = next(line for line in read.stdout.splitlines() if line.startswith("| one | jit | 5 | "))
    assert float(penalty.split("|")[4].split()[0].lstrip("×")) == pytest.approx(1.0, abs=0.005), penalty
    pair = next(line for line in read.stdout.splitlines() if line.startswith("| jit:interp | one | 5 | "))
    assert "3:1, 12:1" in pair and pair.rstrip(" |").endswith("—"), pair
    assert ("a classified cell's later ones its benchmark's warm-up and 6 more: 10 iterations, an unclassified "
            "cell's its first and as many as take as long as 6 of those: 3") in md
    # the JIT's first executions' steady iterations hold still (the fixture's within 0.2 %); the interpreter's are
    # not classified: no steady state kept moving, and the report says nothing of it
    assert cells["jit"]["steady_drift"]["value"] == pytest.approx(1.0, abs=0.003)
    assert cells["interp"]["steady_drift"] is None and "kept moving" not in md
    analysed = current_analysis(Store(str(tmp_path / "s.sqlite"), create=False), result["campaign"]["id"])

    def drift_note(value: float, low: float, high: float, later: int | None = 6) -> str | None:
        planted = Estimate(value, low, high, 0.99, "planted", 3)
        moved = tuple(replace(c, steady_drift=planted) if c.mechanism == "jit" else c for c in analysed.cells)
        facts = replace(analysed.campaign, options={**analysed.campaign.options, "later_steady": later})
        return tables.drift_note(replace(analysed, cells=moved, campaign=facts))

    # havlak's LuaJIT on this machine: its first 6 steady iterations 15 % slower than its others, the whole interval
    # beyond the study's ±2 %; apart from 1 only within the margin, or no later_steady (nothing is cut): nothing
    said = drift_note(1.153, 1.077, 1.234)
    assert said is not None and "jit on one ×1.153 (1.077–1.234)" in said
    assert said.startswith("Steady states that kept moving: in their first executions, the first 6 steady iterations")
    assert drift_note(0.95, 0.93, 0.97) is not None and drift_note(1.03, 1.01, 1.05) is None
    assert drift_note(1.153, 1.077, 1.234, later=None) is None
    # evidence/steady_drift.py reads the same from the store, over the first executions: the JIT's 3 hold still
    read = subprocess.run([sys.executable, str(REPO / "evidence" / "steady_drift.py"), str(tmp_path / "s.sqlite"),
                           "--later-steady", "6"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert read.returncode == 0, read.stderr
    rows_read = [line for line in read.stdout.splitlines() if line.startswith("| one |")]
    assert len(rows_read) == 1 and rows_read[0].startswith("| one | jit | 3 | ×"), read.stdout
    assert float(rows_read[0].split("|")[4].split()[0].lstrip("×")) == pytest.approx(1.0, abs=0.003), rows_read
    # and how to set it against a sequential run's report: evidence/ratio_widths.py --versus, here against itself
    # and against a copy whose ratio is planted half as high again (two 5-block intervals: Welch's 8 degrees)
    assert "evidence/ratio_widths.py SEQUENTIAL.json --versus THIS.json" in md
    same, planted = tmp_path / "same.json", tmp_path / "planted.json"
    same.write_text(json.dumps(result))
    for cell in result["cells"]:
        if cell["ratio"]:
            cell["ratio"].update({k: cell["ratio"][k] * 1.5 for k in ("value", "low", "high")})
    planted.write_text(json.dumps(result))

    def versus(other: Path, *plant: str) -> list[str]:
        read = subprocess.run([sys.executable, str(REPO / "evidence" / "ratio_widths.py"), str(same), "--versus",
                               str(other), *plant], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert read.returncode == 0, read.stderr
        return read.stdout.splitlines()

    row = next(line for line in versus(same) if line.startswith("| interp | one | "))
    assert "| ×1.000 | 1 of 1 | 1 of 1 | +0.0 (8) | no |" in row, row
    row = next(line for line in versus(planted) if line.startswith("| interp | one | "))
    assert "| ×1.500 | 0 of 1 | 0 of 1 | " in row and row.endswith("| yes |"), row
    # --plant multiplies the same onto the second pool as it is read (how its power was measured)
    assert next(line for line in versus(same, "--plant", "1.5") if line.startswith("| interp | one | ")) == row
    # alone, its table: each mechanism's widths, spreads and share within (the report's ratio_within_share)
    alone = subprocess.run([sys.executable, str(REPO / "evidence" / "ratio_widths.py"), str(same)], capture_output=True,
                           text=True, cwd=REPO, timeout=120).stdout.splitlines()
    assert "| sd within / between blocks (medians) | share within (median) |" in alone[0]
    hosts = [c["ratio_within_share"] for c in result["cells"] if c["mechanism"] == "interp"]
    shown = "—" if hosts[0] is None else f"{hosts[0]:.0%}"
    assert next(line for line in alone if line.startswith("| interp |")).split(" | ")[7] == shown


def test_a_budget_with_turn_s_sizes_the_later_blocks_turns_by_time(tmp_path: Path) -> None:
    """turn_s: in the later blocks every turn about that long, from the iteration times of the benchmark's first
    executions; the first blocks, sized unlike (the JIT's 60 iterations beside the interpreter's 5), by iterations
    as without it. What the fixture's iterations take is fixed by the fixture, so the test holds each block to the
    rule applied to the times the campaign had."""
    import json

    from bridgebench.timing.analysis import first_iteration_seconds
    from tests.conftest import bridgebench

    study = stepped_study(tmp_path, "leads", LEADS.replace("later_steady = 6\n", "later_steady = 6\nturn_s = 0.03\n"))
    store_path = tmp_path / "s.sqlite"
    done = bridgebench("run", str(study), "--json", "--store", str(store_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cells = {c["mechanism"]: c for c in json.loads(done.stdout)["cells"]}
    later = first_iteration_seconds(Store(store_path, create=False), 1, "one", 3)
    _, timed = lockstep.timed_turns([1, 1], [later["jit"], later["interp"]], 0.03, anchor=0)  # the baseline's
    for p in range(5):
        rows = {m: next(r for r in cells[m]["per_execution"] if r["pexec"] == p) for m in ("jit", "interp")}
        made = {(r["iterations"] - r["lead"]) // r["turn"] for r in rows.values()}
        assert len(made) == 1 and all((r["iterations"] - r["lead"]) % r["turn"] == 0 for r in rows.values())
        turn = [rows["jit"]["turn"], rows["interp"]["turn"]]
        if p < 3:  # by iterations, as without turn_s
            assert (made.pop(), turn) == lockstep.turns([60, 5]), (p, rows)
        else:
            assert turn == timed, (p, rows, later)
    # not the turns the iterations alone give the later blocks (3 and 1, test above): about 30 ms each
    assert timed != [3, 1]
    assert cells["interp"]["ratio_later_turns"] == [timed] != cells["interp"]["ratio_turns"]
    # interleaved turns are timed by the wall clock too, and sized alike
    store_il = tmp_path / "il.sqlite"
    done = bridgebench("run", str(study), "--json", "--turns", "interleaved", "--store", str(store_il), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    later_il = first_iteration_seconds(Store(store_il, create=False), 1, "one", 3)
    _, timed_il = lockstep.timed_turns([1, 1], [later_il["jit"], later_il["interp"]], 0.03, anchor=0)
    interleaved = {c["mechanism"]: c for c in json.loads(done.stdout)["cells"]}["interp"]
    assert interleaved["ratio_later_turns"] == [timed_il] != interleaved["ratio_turns"]
    # the baseline's turn the whole iterations nearest 0.03 s, the other's the whole iterations nearest that turn's time
    jit_turn = timed[0] * later["jit"]
    assert abs(jit_turn - 0.03) <= later["jit"] / 2
    assert abs(timed[1] * later["interp"] - jit_turn) <= later["interp"] / 2 or timed[1] == 1
    # the replays of stored campaigns read its store (bridgebench/timing/stored_ratios.py): a round's noise by how far
    # apart its turns were, and the rounds model, which needs three later blocks (this campaign has two)
    gap = subprocess.run([sys.executable, str(REPO / "evidence" / "turn_gap.py"), str(store_path)], capture_output=True,
                         text=True, cwd=REPO, timeout=120)
    assert gap.returncode == 0, gap.stderr
    assert any(line.startswith("| interp | 1 | ") for line in gap.stdout.splitlines()), gap.stdout
    model = subprocess.run([sys.executable, str(REPO / "evidence" / "rounds_per_block.py"), str(store_path)],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
    assert (model.returncode, model.stderr.strip()) == (1, "no ratio has three later blocks of two rounds or more")
    # and the turns its later blocks took beside both rules, from the same estimates the harness sized them from
    lengths = subprocess.run([sys.executable, str(REPO / "evidence" / "turn_lengths.py"), str(store_path)],
                             capture_output=True, text=True, cwd=REPO, timeout=120)
    assert lengths.returncode == 0, lengths.stderr
    (row,) = [line for line in lengths.stdout.splitlines() if line.startswith("| s.sqlite #1 | one | ")]
    assert row.endswith(f"| {timed[0]}, {timed[1]} |"), row  # anchored: the turns the blocks took
    # the report's turns note: the ratio's turns were unlike only in its first blocks, by iterations; the later ones
    # took about 30 ms a side
    md = bridgebench("report", "--format", "markdown", "--store", str(store_path), cwd=tmp_path).stdout
    assert "1 of these ratios compares sides whose turns took unlike times" in md
    assert "In all of them only the first 3 blocks' turns were unlike" in md
    # evidence/later_blocks.py reads the same ratio from the store: every block, then the 2 later ones alone
    read = subprocess.run([sys.executable, str(REPO / "evidence" / "later_blocks.py"), str(store_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert read.returncode == 0, read.stderr
    (row,) = [line for line in read.stdout.splitlines() if line.startswith("| s.sqlite #1 | one | ")]
    assert row.split(" | ")[4] == "too few" and "(5)" in row.split(" | ")[3], row


def test_a_shared_layout_is_one_draw_per_block_for_all_its_members_by_default(tmp_path: Path) -> None:
    import json

    from tests.conftest import bridgebench, rows

    db, study = tmp_path / "s.sqlite", _study(tmp_path)
    done = bridgebench("run", str(study), "--store", str(db), cwd=tmp_path)  # lock-step blocks: shared
    assert done.returncode == 0, done.stderr
    by_block: dict[str, list[dict]] = {}
    alone = []
    for mechanism, info in rows(db, "SELECT mechanism, info_json FROM execution"):
        stored = json.loads(info)
        if mechanism == "c":  # not stepped: it runs alone and draws its own
            alone.append(stored["layout"])
        else:
            by_block.setdefault(stored["pairing"]["block"], []).append(stored["layout"])
    assert len(by_block) == 3 and all(len(draws) == 2 and draws[0] == draws[1] for draws in by_block.values())
    # a fresh draw each block: 3 blocks alike by chance once in 4096² × 4096² campaigns
    assert len({json.dumps(draws[0], sort_keys=True) for draws in by_block.values()}) > 1
    assert len(alone) == 3 and all(0 <= v < layout.MAX_PAD for d in alone for v in d.values())
    markdown = next((tmp_path / "results").glob("stepping-*.md")).read_text()
    assert "memory layout drawn per block, the same for its members" in markdown
    # without blocks there is nothing to share: asked for, it is refused in a line; by default each execution draws
    refused = bridgebench("run", str(study), "--pairing", "sequential", "--layout", "shared", "--store",
                          str(tmp_path / "t.sqlite"), cwd=tmp_path)
    assert refused.returncode != 0 and "only lock-step blocks share a layout" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    sequential = bridgebench("run", str(study), "--json", "--pairing", "sequential", "--store",
                             str(tmp_path / "u.sqlite"), cwd=tmp_path)
    assert sequential.returncode == 0, sequential.stderr
    draws = [json.loads(i)["layout"] for (i,) in rows(tmp_path / "u.sqlite", "SELECT info_json FROM execution")]
    assert len({json.dumps(d, sort_keys=True) for d in draws}) == len(draws) == 9  # one each
    assert any("memory layout drawn per execution" in f.read_text() for f in (tmp_path / "results").glob("*.md"))


def test_a_campaign_with_interleaved_turns_stores_and_says_so(tmp_path: Path) -> None:
    import json

    from tests.conftest import bridgebench, rows

    db, study = tmp_path / "s.sqlite", _study(tmp_path)
    done = bridgebench("run", str(study), "--turns", "interleaved", "--store", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (config,) = rows(db, "SELECT config_json FROM campaign")
    assert json.loads(config[0])["options"]["turns"] == "interleaved"
    shared = {m: json.loads(i)["pairing"]["interleaved_with"] for m, i in
              rows(db, "SELECT mechanism, info_json FROM execution WHERE mechanism != 'c'")}
    assert shared == {"a": 1, "b": 1}  # a and b take turns of one iteration: together, interleaved
    markdown = next((tmp_path / "results").glob("stepping-*.md")).read_text()
    assert "members whose turns were equal (a VM and its twin) took them interleaved" in markdown
    separate = bridgebench("run", str(study), "--store", str(tmp_path / "t.sqlite"), "--report-dir",
                           str(tmp_path / "separate"), cwd=tmp_path)
    assert separate.returncode == 0, separate.stderr
    assert "interleaved" not in next((tmp_path / "separate").glob("stepping-*.md")).read_text()
    (config,) = rows(tmp_path / "t.sqlite", "SELECT config_json FROM campaign")
    assert json.loads(config[0])["options"]["turns"] == "separate"


@pytest.mark.parametrize(("turns", "words"), [(TOGETHER, "took its turns at the same time"),
                                               (TWINS, "took them at the same time")])
def test_a_campaign_with_turns_at_once_stores_cpu_times_and_says_so(tmp_path: Path, turns: str, words: str) -> None:
    """`--turns together`, and `--turns twins` where the stepped cells' turns are equal: their iterations are
    their CPU times, the wall times they answered kept beside them; the cell that ran alone (no stepped mode) is
    timed by its probe's CPU clock where it reports one (here with twins), else keeps its wall times and says so;
    the report says what a ratio is then."""
    import json

    from tests.conftest import bridgebench, rows

    db, study = tmp_path / "s.sqlite", _study(tmp_path)
    if turns == TWINS:  # c's probe reports its CPU time: half its wall time
        study.write_text(study.read_text().replace('LEVEL = "0.003"', 'LEVEL = "0.003", CPU_S = "0.5"'))
    done = bridgebench("run", str(study), "--turns", turns, "--store", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (config,) = rows(db, "SELECT config_json FROM campaign")
    assert json.loads(config[0])["options"]["turns"] == turns
    for mechanism, info in rows(db, "SELECT mechanism, info_json FROM execution"):
        stored = json.loads(info)
        if mechanism == "c" and turns == TWINS:  # alone, on the probe's CPU clock
            assert "pairing" not in stored and set(stored["wall_times"]) == {0.003}
            assert stored["cpu_from"] == "probe"
            times = rows(db, "SELECT s.data FROM series s JOIN execution e ON s.execution_id = e.id WHERE "
                             "e.mechanism = 'c' AND s.name = 'seconds'")
            assert {v for (data,) in times for v in np.frombuffer(data, dtype="<f8").tolist()} == {0.0015}
        elif mechanism == "c":  # alone, no CPU time to be had: its wall times, named
            assert "pairing" not in stored and "wall_times" not in stored
            assert stored["cpu_from"].startswith("wall clock")
        else:
            level = {"a": 0.001, "b": 0.002}[mechanism]  # what the fixture answers, whatever its CPU time
            assert stored["pairing"]["together"] is True and set(stored["wall_times"]) == {level}
    markdown = next((tmp_path / "results").glob("stepping-*.md")).read_text()
    assert words in markdown and "CPU time" in markdown
    # a campaign on the wall clock beside it: diff refuses to set one against the other, both ways round
    assert bridgebench("run", str(study), "--store", str(db), cwd=tmp_path).returncode == 0
    for a, b in (("1", "2"), ("2", "1")):
        refused = bridgebench("diff", a, b, "--store", str(db), cwd=tmp_path)
        assert refused.returncode == 2 and f"campaign 1 timed CPU time on a shared CPU (--turns {turns})" in \
            refused.stderr
    assert bridgebench("diff", "1:a", "1:b", "--store", str(db), cwd=tmp_path).returncode == 0
    if turns == TWINS:  # CPU times beside a twin and beside every member are not alike either
        assert bridgebench("run", str(study), "--turns", TOGETHER, "--store", str(db), cwd=tmp_path).returncode == 0
        refused = bridgebench("diff", "1", "3", "--store", str(db), cwd=tmp_path)
        assert refused.returncode == 2 and "(--turns twins) and campaign 3 CPU time with --turns together" in \
            refused.stderr


# b's first timed process (the answer check's run counts 0) has no steady state; never's have none at all
REPLACING = """
[study]
name = "replacing"
baseline = "a"

[budget]
process_executions = 3
iterations = 60
timeout_s = 30
replace_dropped = true

""" + stepped_mechanism("a", 'LEVEL = "0.001"') \
    + stepped_mechanism("b", 'LEVEL = "0.002", FACTORS = "1.0", COUNTER = "{study}/count-b", NOSTEADY = "1"') \
    + stepped_mechanism("never", 'LEVEL = "0.002", FACTORS = "1.0", COUNTER = "{study}/count-never", '
                        'NOSTEADY = "0,1,2,3,4,5,6,7"') + ONE_BENCHMARK


def test_a_fixed_budget_that_replaces_dropped_blocks_runs_one_more_where_a_block_counted_for_nothing(
        tmp_path: Path) -> None:
    """`replace_dropped`: b's first block counts for nothing (its process has no steady state), so the campaign
    runs a fourth block and b's ratio rests on 3; a mechanism that never settles gets no more blocks for it."""
    import json

    from tests.conftest import bridgebench, rows

    study = stepped_study(tmp_path, "replacing", REPLACING)
    done = bridgebench("run", str(study), "--json", "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    planned = dict(rows(tmp_path / "s.sqlite", "SELECT mechanism, count(*) FROM planned GROUP BY mechanism"))
    assert planned == {"a": 4, "b": 4, "never": 4}  # one block more, every member of it
    cells = {c["mechanism"]: c for c in json.loads(done.stdout)["cells"]}
    assert cells["b"]["ratio"]["executions"] == 3 and cells["never"]["ratio"] is None
    markdown = next((tmp_path / "results").glob("replacing-*.md")).read_text()
    assert "blocks run beyond the plan: one 1." in markdown
    # sequential, an execution of each mechanism is what a block is: b's ratio rests on 3 of its executions
    again = stepped_study(tmp_path, "sequential", REPLACING)  # its own process counters
    sequential = bridgebench("run", str(again), "--json", "--pairing", "sequential", "--store",
                             str(tmp_path / "q.sqlite"), cwd=tmp_path)
    assert sequential.returncode == 0, sequential.stderr
    cells = {c["mechanism"]: c for c in json.loads(sequential.stdout)["cells"]}
    assert cells["b"]["ratio"]["executions"] == 3 and cells["b"]["executions_ok"] == 4
    assert "blocks run beyond the plan: one 1." in next((tmp_path / "results").glob("replacing-*.md")).read_text()
    # without the key, the same study runs its 3 blocks and b's ratio rests on 2
    fixed = stepped_study(tmp_path, "fixed", REPLACING.replace("replace_dropped = true\n", ""))
    plain = bridgebench("run", str(fixed), "--json", "--store", str(tmp_path / "t.sqlite"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    ratios = {c["mechanism"]: c["ratio"] for c in json.loads(plain.stdout)["cells"]}
    assert ratios["b"]["executions"] == 2 and ratios["never"] is None


def test_a_campaign_interrupted_in_a_replacement_block_resumes_and_replaces_what_still_counts_for_nothing(
        tmp_path: Path) -> None:
    """The interrupted replacement block's other members run again alone on resume (a block of one pairs with
    nothing), so it too counts for nothing and one more is planned: nothing lost, nothing twice, b's ratio on 3."""
    from bridgebench.build import build_study
    from bridgebench.campaign import engine, timing
    from bridgebench.campaign.kinds import TIMING
    from bridgebench.store import Store
    from bridgebench.study import read_study

    study = read_study(stepped_study(tmp_path, "replacing", REPLACING))
    builds = build_study(study, tmp_path / "build")
    options = timing.options_for(study, "default", None, None)
    store = Store(tmp_path / "s.sqlite")
    cid = engine.create(store, TIMING, study, options, builds, TIMING.check(study, builds, options))

    def interrupt_in_the_replacement(task: object, run: object) -> None:
        if task.pexec == 3:  # type: ignore[attr-defined]
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.run_pending(store, TIMING, study, cid, options, builds, interrupt_in_the_replacement)
    assert store.campaign(cid).state == "interrupted" and store.pending(cid)
    engine.run_pending(store, TIMING, study, cid, options, builds)
    keys = sorted((e.mechanism, e.pexec) for e in store.executions(cid))
    assert keys == sorted((m, p) for m in ("a", "b", "never") for p in range(5))  # none lost, none twice
    assert len(store.planned(cid)) == 15 and store.campaign(cid).state == "done"
    ratio = next(c.ratio for c in TIMING.analyse(store, cid).cells if c.mechanism == "b")
    assert ratio is not None and ratio.executions == 3


def test_replace_dropped_is_for_a_fixed_budget(tmp_path: Path) -> None:
    from tests.conftest import bridgebench

    study = stepped_study(tmp_path, "adaptive", REPLACING.replace(
        "replace_dropped = true", "replace_dropped = true\nuntil_ci = 0.02\nmax_process_executions = 5\n"
        "max_time_s = 60"))
    done = bridgebench("run", str(study), "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 2 and "replace_dropped is for a fixed budget" in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("--pairing", "sideways"), "--pairing sideways: expected one of lockstep, sequential"),
    (("--layout", "tidy"), "--layout tidy: expected one of drawn, shared, fixed"),
    (("--turns", "sideways"), "--turns sideways: expected one of separate, interleaved"),
    (("--turns", "interleaved", "--pairing", "sequential"), "--turns interleaved: only lock-step blocks take turns"),
    (("--turns", "together", "--pairing", "sequential"), "--turns together: only lock-step blocks take turns"),
])
def test_a_wrong_pairing_layout_or_turns_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...],
                                                           message: str) -> None:
    from tests.conftest import bridgebench

    done = bridgebench("run", str(_study(tmp_path)), *args, "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_interrupted_lock_step_campaign_resumes_losing_and_duplicating_nothing(tmp_path: Path) -> None:
    import json

    from bridgebench.build import build_study
    from bridgebench.campaign import engine, timing
    from bridgebench.campaign.kinds import TIMING
    from bridgebench.store import Store
    from bridgebench.study import read_study

    study = read_study(_study(tmp_path))
    builds = build_study(study, tmp_path / "build")
    options = timing.options_for(study, "default", None, None)
    store = Store(tmp_path / "s.sqlite")
    cid = engine.create(store, TIMING, study, options, builds, TIMING.check(study, builds, options))
    stored: list[tuple[str, int]] = []

    def interrupt_after_the_first(task: object, run: object) -> None:
        stored.append((task.mechanism, task.pexec))  # type: ignore[attr-defined]
        raise KeyboardInterrupt  # the block's other member ran, but is not stored yet

    with pytest.raises(KeyboardInterrupt):
        engine.run_pending(store, TIMING, study, cid, options, builds, interrupt_after_the_first)
    assert store.campaign(cid).state == "interrupted" and len(stored) == 1
    engine.run_pending(store, TIMING, study, cid, options, builds)
    executions = store.executions(cid)
    keys = [(e.mechanism, e.pexec) for e in executions]
    assert sorted(keys) == sorted({(m, p) for m in "abc" for p in range(3)}) and len(keys) == 9
    pairing = {(e.mechanism, e.pexec): json.loads(e.info_json).get("pairing") for e in executions}
    first, = stored
    partner = ("b" if first[0] == "a" else "a", first[1])
    # the interrupted block's partner ran again on resume, alone and in batch mode (a block of one pairs with
    # nothing, and a lone stepped process runs slower here: evidence/turn_cost.py)
    assert pairing[partner] is None and pairing[first]["members"] == 2
    assert all(pairing[("a", p)]["block"] == pairing[("b", p)]["block"] for p in range(3) if p != first[1])
    ratio = next(c.ratio for c in TIMING.analyse(store, cid).cells if c.mechanism == "b")
    assert ratio is not None and ratio.executions == 2 and not ratio.has_interval  # two whole blocks: too few


def test_two_runs_ratios_agree_are_compatible_or_contradict() -> None:
    from evidence.layout_paths import AGREE, COMPATIBLE, CONTRADICT, agreement

    def ratio(value: float, low: float | None, high: float | None) -> dict:
        return {"value": value, "low": low, "high": high, "confidence": 0.99, "method": "m", "executions": 8}

    assert agreement(ratio(1.0, 0.99, 1.01), ratio(1.0, 0.985, 1.012), 0.02) == AGREE  # both equivalent
    assert agreement(ratio(1.0, 0.99, 1.01), ratio(1.0, 0.95, 1.05), 0.02) == COMPATIBLE  # equivalent, undecided
    assert agreement(ratio(1.0, None, None), ratio(1.05, 1.03, 1.07), 0.02) == COMPATIBLE  # no interval
    assert agreement(ratio(1.05, 1.01, 1.09), ratio(0.97, 0.95, 0.99), 0.02) == CONTRADICT  # slower, faster: apart
    assert agreement(ratio(1.0, 0.99, 1.01), ratio(1.05, 1.03, 1.07), 0.02) == CONTRADICT  # intervals apart


SOLO = """
[study]
name = "solo"
baseline = "jit"

[budget]
process_executions = 3
iterations = 50
execution_s = 0.03
min_iterations = 3
timeout_s = 30
turns = "twins"

[budget.flat]
process_executions = 3
iterations = 6

""" + stepped_mechanism("jit", 'LEVEL = "0.001", CPU_S = "0.5"') \
    + stepped_mechanism("twin", 'LEVEL = "0.001", CPU_S = "0.5"', first="twin = true\n") \
    + stepped_mechanism("interp", 'LEVEL = "0.01", CPU_S = "0.5"') + ONE_BENCHMARK


@pytest.mark.parametrize("turns", [TWINS, INTERLEAVED])
def test_twins_with_a_member_of_another_turn_give_the_baseline_a_turn_alone_and_say_so(tmp_path: Path,
                                                                                        turns: str) -> None:
    """The baseline and its twin (`twin = true`; 30 iterations, turns of 10) take their turns at once (twins) or
    one iteration each (interleaved), and the interpreter (3, turns of 1) its alone; the baseline also takes a turn
    alone every round, stores those as its iterations and its turns beside its twin in its pairing, and the report
    says which ratios are to which. With every member's turn alike (a budget of 6 iterations each), the interpreter
    still takes its alone: a twin is what the study names, not an equal turn."""
    import json

    from tests.conftest import bridgebench, rows

    db, study = tmp_path / "s.sqlite", stepped_study(tmp_path, "solo", SOLO)
    done = bridgebench("run", str(study), "--json", "--turns", turns, "--store", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stored = {}
    for mechanism, info in rows(db, "SELECT mechanism, info_json FROM execution"):
        stored.setdefault(mechanism, []).append(json.loads(info)["pairing"])
    beside = {"together": True, "interleaved_with": 0} if turns == TWINS else {"together": False, "interleaved_with": 1}
    for pairing in stored["jit"]:
        assert (pairing["turn"], pairing["rounds"]) == (10, 3) and {k: pairing[k] for k in beside} == beside
        assert len(pairing["twin_times"]) == 30 and len(pairing["solo_positions"]) == 3
    assert all("twin_times" not in p for p in stored["twin"] + stored["interp"])
    assert {len(d) for (d,) in rows(db, "SELECT s.data FROM series s JOIN execution e ON s.execution_id = e.id "
                                        "WHERE s.name = 'seconds' AND e.mechanism = 'jit'")} == {30 * 8}
    cells = {c["mechanism"]: c for c in json.loads(done.stdout)["cells"]}
    assert cells["twin"]["ratio"]["value"] == pytest.approx(1.0) and cells["interp"]["ratio"]["value"] == \
        pytest.approx(10.0)
    assert cells["twin"]["ratio"]["method"] == cells["interp"]["ratio"]["method"] == LOCKSTEP_METHOD
    markdown = next((tmp_path / "results").glob("solo-*.md")).read_text()
    assert "the baseline took a turn alone as well every round" in markdown
    assert ("took their turns at the same time" if turns == TWINS else "took their turns interleaved") in markdown
    assert ("measured this way only on a slow day" if turns == TWINS else "fewer blocks fit the time") in markdown
    flat = bridgebench("run", str(study), "--budget", "flat", "--turns", turns, "--store", str(db), cwd=tmp_path)
    assert flat.returncode == 0, flat.stderr
    again = {m: json.loads(info)["pairing"] for m, info in
             rows(db, "SELECT mechanism, info_json FROM execution WHERE campaign_id = 2 AND pexec = 0")}
    key = "together" if turns == TWINS else "interleaved_with"
    assert (bool(again["jit"][key]), bool(again["twin"][key]), bool(again["interp"][key])) == (True, True, False)
    assert len(again["jit"]["twin_times"]) == 6 and again["jit"]["turn"] == again["interp"]["turn"] == 1
