"""`bridgebench calibrate`: how far this machine moves a constant program's speed by itself, and the δ that
follows from it.

The warm-up classification (docs/methodology.md §3) counts two segments of an execution as the same
performance when their means differ by less than δ (relative to the fastest segment). A δ too small makes
the machine's own drift look like warm-ups and slowdowns; too large hides a program's real ones. A fixed
1 % suits some machines and not others, so this command runs a constant program (probes/c/constant.c,
unlike the self-test's planted workload) as fresh process executions, classifies each at a range of δ,
and takes the smallest δ at which at least FLAT_TARGET of them are flat: the smallest shift this machine
does not make by itself. A longer execution meets more of the machine's steps, so it does this at several
execution lengths (rounds of one execution of each length, so that the machine's mood hits them alike),
and every execution of a campaign is later judged with the δ of the length nearest its own
(options.delta_for). It stores that with the machine; every campaign created on the machine after it
is judged with it (the campaign's options keep the δ by length, so its analysis never changes afterwards),
and the report says which δ, and whether calibrated. It records too what it saw at each length: the
start-up profile (each tenth of the iterations against the second half's median), the largest segment
shift per execution, and the spread between executions.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridgebench import environment, reference
from bridgebench.reference import FLAGS, PASSES, SOURCE
from bridgebench.runner import OK, Execution, execute
from bridgebench.stats.classify import FLAT, classify_execution

DELTAS = (0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10)
FLAT_TARGET = 0.95  # the self-test's goal for a planted flat workload on a quiet machine
# Fresh processes per length, and the lengths in iterations of 1.4–2.2 ms (methodology §3): about 0.2, 0.5
# and 1.5 s, from the self-test's executions (0.36 s) to lua-vms's (about 1 s with start-up and warm-up).
EXECUTIONS, LENGTHS = 60, (100, 250, 700)
TIMEOUT_S = 120.0


class CalibrationError(Exception):
    """The constant program could not be built or run; the message is one line."""


@dataclass(frozen=True)
class Calibration:
    machine: str
    created: float
    delta_relative: float  # the δ campaigns on this machine are judged with
    reached: bool  # False: even the largest δ tried left more than 1 - FLAT_TARGET not flat
    executions: int
    iterations: int
    iteration_ms: float  # median over executions of their median iteration
    flat_by_delta: dict[str, float]  # δ -> share of the executions classified flat
    largest_shift: dict[str, float]  # percentile -> the largest segment shift per execution, at δ = 0
    between_executions_cv: float  # sd / mean of the executions' medians
    startup_profile: tuple[float, ...]  # each tenth's mean over the second half's median, averaged

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        return cls(**{**data, "startup_profile": tuple(data["startup_profile"])})

    @property
    def when(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(self.created))

    @property
    def execution_s(self) -> float:
        """How long an execution of this length runs its iterations (the median iteration's worth)."""
        return self.iterations * self.iteration_ms / 1e3


@dataclass(frozen=True)
class MachineCalibration:
    """One `bridgebench calibrate`: a Calibration per execution length, shortest first. Stored as JSON with
    the machine; campaigns read it as a δ by length (options.delta_table)."""

    machine: str
    created: float
    lengths: tuple[Calibration, ...]
    described: dict[str, Any] = field(default_factory=dict)  # the boot and CPU it was made on (reference.py)

    def to_json(self) -> dict[str, Any]:
        return {"machine": self.machine, "created": self.created, "lengths": [c.to_json() for c in self.lengths],
                "described": self.described}


def flat_share(series: list[np.ndarray], delta: float) -> float:
    return sum(classify_execution(s, delta_relative=delta).kind == FLAT for s in series) / len(series)


def choose_delta(shares: dict[float, float]) -> tuple[float, bool]:
    """The smallest δ whose share of flat executions reaches FLAT_TARGET; else the largest, not reached."""
    for delta in sorted(shares):
        if shares[delta] >= FLAT_TARGET:
            return delta, True
    return max(shares), False


def largest_shift(times: np.ndarray) -> float:
    """The largest difference of a segment's mean from the last segment's, over the fastest segment's mean,
    at δ = 0: what δ would have to tolerate for this execution to be flat."""
    segments = classify_execution(times, delta_relative=0.0).segments
    fastest = min(s.mean for s in segments)
    return max(abs(s.mean - segments[-1].mean) for s in segments) / fastest


def judge(series: list[np.ndarray], machine: str) -> Calibration:
    """The calibration these constant executions imply (a pure function: the tests drive it)."""
    if not series:
        raise CalibrationError("no execution of the constant program succeeded")
    shares = {d: flat_share(series, d) for d in DELTAS}
    delta, reached = choose_delta(shares)
    medians = np.array([float(np.median(s)) for s in series])
    shifts = [largest_shift(s) for s in series]
    profile = np.mean([[float(np.mean(part)) / float(np.median(s[len(s) // 2:])) for part in np.array_split(s, 10)]
                       for s in series], axis=0)
    return Calibration(
        machine=machine, created=time.time(), delta_relative=delta, reached=reached, executions=len(series),
        iterations=len(series[0]), iteration_ms=1e3 * float(np.median(medians)),
        flat_by_delta={f"{d:g}": s for d, s in shares.items()},
        largest_shift={str(p): float(np.percentile(shifts, p)) for p in (50, 90, 95, 99)},
        between_executions_cv=float(np.std(medians, ddof=1) / np.mean(medians)) if len(series) > 1 else 0.0,
        startup_profile=tuple(float(x) for x in profile))


def judge_lengths(series: dict[int, list[np.ndarray]], machine: str, described: dict[str, Any] | None = None
                  ) -> MachineCalibration:
    """The calibration at each length measured (iterations -> its executions' series), shortest first."""
    lengths = sorted((judge(s, machine) for s in series.values()), key=lambda c: c.execution_s)
    return MachineCalibration(machine, min(c.created for c in lengths), tuple(lengths), described or {})


def build(build_dir: Path) -> Path:
    """The constant program, compiled into the build folder."""
    folder = build_dir / "calibrate"
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "constant"
    done = subprocess.run(["cc", *FLAGS, "-o", str(binary), str(SOURCE)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise CalibrationError(f"cannot build {SOURCE}: "
                               f"{(done.stderr.strip().splitlines() or ['cc failed'])[-1]}")
    return binary


def measure(build_dir: Path, executions: int = EXECUTIONS, lengths: tuple[int, ...] = LENGTHS,
            passes: int = PASSES, on_execution: Callable[[int, int, Execution], None] | None = None
            ) -> dict[int, list[np.ndarray]]:
    """Run the constant program as `executions` fresh process executions at each length (in iterations),
    in rounds of one execution of each length, through the harness's own launcher; each one's iteration
    times by length. A failed execution stops the calibration."""
    binary = build(build_dir)
    series: dict[int, list[np.ndarray]] = {n: [] for n in lengths}
    for i in range(executions):
        for n in series:
            run = execute([str(binary), str(n), str(passes)], {"PATH": "/usr/bin:/bin"}, binary.parent, n,
                          TIMEOUT_S)
            if on_execution:
                on_execution(i, n, run)
            if run.status != OK or run.output is None:
                raise CalibrationError(f"the constant program's execution {i + 1} of {n} iterations failed: "
                                       f"{run.status}: {run.detail}")
            series[n].append(np.asarray(run.output.times, dtype=np.float64))
    return series


def calibrate(build_dir: Path, executions: int = EXECUTIONS, lengths: tuple[int, ...] = LENGTHS,
              on_execution: Callable[[int, int, Execution], None] | None = None) -> MachineCalibration:
    """Measure this machine at each length and judge the δ that follows: what `bridgebench calibrate`
    stores with the machine."""
    env = environment.capture()
    return judge_lengths(measure(build_dir, executions, lengths, on_execution=on_execution),
                         environment.machine_id(env), reference.described(env))
