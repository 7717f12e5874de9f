"""The machine's speed at a campaign's start and end, read with a fixed C loop, so that a report can say when
the machine was not the one it usually is.

Why: this project's VM can run the same code at a different speed for hours (docs/methodology.md §8: on
2026-11-27 PUC Lua ran two to three times as slowly as the morning before, all day), with no steal and no
other process, so the disturbance audit flagged few of those executions, and a report or a `diff` across
campaigns could not tell. A reading is the median iteration of the constant program `calibrate` measures
the machine's drift with (probes/c/constant.c, floating-point passes over a 32 KiB array), run pinned to the
CPU the campaign's lock-step blocks use, for about a tenth of a second. Set against the machine's
calibration, or against another campaign's reading, it shows a change of host or clock. It does not say what
a given workload lost: on 2026-11-27 the loop read 1.4 times its calibration while PUC Lua ran 2.5 times as
slowly, so a reading near its calibration is no proof that the machine was as usual. What the loop's 32 KiB never
reach, the cache the cores share with other tenants, shared_cache.py reads: for `doctor`, and beside this loop for
campaigns with a time cap of a minute or more (engine.read_speed).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bridgebench import native
from bridgebench.affinity import spawning_on
from bridgebench.digits import significant
from bridgebench.environment import Advice
from bridgebench.protocol import ProtocolError, parse
from bridgebench.study import PROBES_DIR

SOURCE = PROBES_DIR / "c" / "constant.c"
FLAGS = ("-O2", "-Wall", "-Wextra")
PASSES = 170  # passes over the array an iteration: 1.4–2.0 ms on the project's VMs (methodology §3)
ITERATIONS = 60
SKIPPED = 10  # left out: calibrations found an execution's first tenth 1.4–1.7 % slower than its second half
TIMEOUT_S = 60.0
# Two readings further apart than this are "a different speed": the loop's own steps on this VM reach 5–9 %
# in about one execution in ten (calibrate, methodology §3), so a smaller gap is not taken as the machine's.
APART = 0.10


@dataclass(frozen=True)
class Reading:
    """One reading: when, on which CPU, and the loop's median iteration (None, with the reason, if it failed)."""

    moment: str  # "start", "resume" or "end" of a run of the campaign
    taken: float
    cpu: int | None
    iteration_s: float | None
    spread: float | None = None  # the iterations' interquartile range over their median
    detail: str = ""
    machine: str = ""  # the machine that took it, as the store keeps it (a fleet's worker, or the campaign's)
    # Where a load over a quarter of the shared cache lay between one in a core's own cache (1) and one from memory
    # (0), read right after the loop (shared_cache.py; engine.read_speed says when); None: not read.
    shared_held: float | None = None


def binary() -> Path:
    """The constant program, compiled once into the harness's cache."""
    return native.compiled(SOURCE, FLAGS)


def read(moment: str, cpu: int | None, iterations: int = ITERATIONS) -> Reading:
    """Run the loop once, pinned to `cpu` (None: wherever the harness may run), and read its speed."""
    taken = time.time()
    try:
        program = binary()
    except OSError as e:
        return Reading(moment, taken, cpu, None, None, f"cannot build {SOURCE.name}: {str(e)[:200]}")
    times, detail = loop_times(program, (str(iterations), str(PASSES)), iterations, cpu)
    if times is None:
        return Reading(moment, taken, cpu, None, None, detail)
    times = times[SKIPPED:]
    median = float(np.median(times))
    q1, q3 = np.percentile(times, [25, 75])
    return Reading(moment, taken, cpu, median, float((q3 - q1) / median))


def loop_times(program: Path, args: tuple[str, ...], iterations: int, cpu: int | None
               ) -> tuple[np.ndarray | None, str]:
    """Run a program of the probe protocol once (a constant C loop; a probe, for evidence/), pinned to `cpu`, and
    give its iterations' times, or None and why not (it could not start, did not end within TIMEOUT_S, failed or
    printed something else)."""
    try:
        with spawning_on(cpu):
            proc = subprocess.Popen([str(program), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
    except OSError as e:
        return None, f"cannot run {program.name}: {e.strerror}"
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, f"{program.name} did not end within {TIMEOUT_S:g} s"
    except BaseException:  # an interrupt: the loop does not outlive the harness's run
        proc.kill()
        proc.wait()
        raise
    if proc.returncode != 0:
        return None, f"{program.name} exited with {proc.returncode}: {err.strip()[-200:]}"
    try:
        return np.asarray(parse(out, iterations).times, dtype=np.float64), ""
    except ProtocolError as e:
        return None, f"{program.name}: {e}"


def apart(r: float | None) -> bool:
    """Whether a ratio of two readings is a different speed, beyond the loop's own steps."""
    return r is not None and abs(r - 1) > APART


def calibrated(record: dict[str, Any] | None) -> tuple[float | None, float | None]:
    """The loop's iteration in a stored calibration (calibrate.py), at its shortest execution length (the
    nearest to a reading's), in seconds, and when it was made; (None, None) without one."""
    if not record:
        return None, None
    lengths = record.get("lengths") or [record]  # stored before lengths: one calibration
    ms = min(lengths, key=lambda c: c.get("iterations", 0)).get("iteration_ms")
    return (ms / 1000 if ms else None), record.get("created")


# What says which boot and which CPU a calibration was made on (environment.capture): the machine's id stays
# the same across boots, and a VM booted again may run on another host.
DESCRIBED = ("booted", "cpu_signature")


def described(env: dict[str, Any]) -> dict[str, Any]:
    return {k: env.get(k) for k in DESCRIBED}


def elsewhere(record: dict[str, Any] | None, env: dict[str, Any]) -> str | None:
    """How the machine differs from the one a calibration was made on (another boot, another CPU), or None
    where they agree or either does not say."""
    made = (record or {}).get("described") or {}
    said = [f"{what} ({made[k]}; now {env[k]})" for k, what in (("cpu_signature", "another CPU"),
                                                                ("booted", "another boot"))
            if made.get(k) and env.get(k) and made[k] != env[k]]
    return "the calibration was made on " + " and ".join(said) if said else None


def advice(reading: Reading, calibration: dict[str, Any] | None, env: dict[str, Any] | None = None) -> Advice:
    """`doctor`'s finding: the loop's speed now, against the machine's calibration where there is one."""
    topic = "speed now (reference loop)"
    if not reading.iteration_s:
        return Advice(topic, "not read", False, reading.detail)
    now = f"{reading.iteration_s * 1000:.3g} ms an iteration"
    if reading.spread is not None:  # a host stepping its speed while the loop ran shows here
        now += f", interquartile range {significant(reading.spread * 100, 2)} %"
    then, made = calibrated(calibration)
    if not then:
        return Advice(topic, now, True, "no calibration of this machine in the store to set it against: run "
                      "`bridgebench calibrate` once on a day it runs as usual")
    ratio = reading.iteration_s / then
    day = time.strftime("%Y-%m-%d", time.gmtime(made or 0))
    state = f"{now}; {then * 1000:.3g} ms in the calibration of {day} ({ratio:.2f} times as long)"
    other = elsewhere(calibration, env or {})
    if not apart(ratio):
        return Advice(topic, state, True, other or "")
    return Advice(topic, state, False, "not the machine as calibrated (a VM on another host, or its host slowed"
                  + (f"; {other}" if other else "") + "): ratios within one campaign still hold (lock-step), but "
                  "a figure compared with a campaign of another time measures the machine too")
