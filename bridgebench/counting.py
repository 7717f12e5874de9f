"""Instruction counts per iteration (`run --metric instructions`): one process execution under callgrind.

Wall time on a shared machine drifts by percents; the number of instructions a program executes does not
depend on the machine's mood. The probe brackets each iteration with callgrind's client requests (zero the
counters before, dump them after: probes/lua/bbclock.c, probes/c/planted.c), so callgrind writes one part
an iteration, plus one for the rest of the process at its exit; this module runs the execution under
callgrind, reads the parts back, and hands the counts on as the execution's `instructions` series.

Why callgrind and not cachegrind: Debian 12's valgrind (3.19) has client requests for callgrind only
(cachegrind gained start/stop requests in 3.22). Counts are Ir, instructions executed as valgrind's
guest CPU sees them; JIT-compiled code is counted as it runs. What counts miss: time in system calls and
the kernel, waiting (I/O, locks, page faults), and everything the memory hierarchy does to time (caches,
TLBs, branch prediction) — callgrind's cache simulation is off here.

What moves counts besides the program, and is pinned (`pinning()`, recorded with the campaign; `diff`
refuses to compare counts taken under different pinnings):
- address-space randomisation: off for the execution (`setarch -R`), so allocations and hashes of
  addresses repeat;
- the initial stack: argv and the environment are padded to a fixed size, so a checkout's path length
  does not shift the stack;
- glibc's choice of string and memory routines by CPU features: GLIBC_TUNABLES masks the wide vector
  variants, so counts do not follow the host's CPU (valgrind's own version and the CPU model are recorded);
- the wall clock: libfaketime holds it at one instant (the monotonic clocks the probes time with run on),
  because some runtimes seed their hashes with it (Lua 5.4's luai_makeseed: measured, executions of one
  cell counted up to 3.3 % apart with it running, the same to the instruction with it held).
"""

from __future__ import annotations

import glob
import platform
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

INSTRUCTIONS = "instructions"  # the series an execution's counts are stored as, and the metric's name
SECONDS = "seconds"  # the other metric: wall time, the probe's own series
METRICS = (SECONDS, INSTRUCTIONS)
ANALYSED_PER = 1e9  # counts are analysed in billions of instructions (analysis.metric_series says why)

# Masked so glibc picks its baseline (SSE2) string and memory routines whatever the host offers.
GLIBC_TUNABLES = ("glibc.cpu.hwcaps=-AVX2,-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-ERMS,-FSRM,-AVX,-BMI2,"
                  "-AVX_Fast_Unaligned_Load")
STACK_BYTES = 8192  # argv + environment are padded to this many bytes (their strings and terminators)
PAD = "BRIDGEBENCH_PAD"
FAKETIME = "2000-01-01 00:00:00"  # the wall clock every counted execution sees
FAKETIME_LIBRARY = "/usr/lib/*/faketime/libfaketime.so.1"
CALLGRIND_OPTIONS = ("--tool=callgrind", "--combine-dumps=yes", "--dump-instr=no", "--dump-line=no",
                     "--compress-strings=no", "--compress-pos=no")
# The last words of valgrind's own crash report (an internal error, not the program's).
VALGRIND_ABORTED = "please report this bug to: www.valgrind.org"


class CountingError(Exception):
    """Counts that cannot be had or read; one line, ready to print."""


def analysed(count: Any) -> Any:
    """A count (or an array of them) in the unit the analysis takes: billions of instructions."""
    return count / ANALYSED_PER


@cache
def valgrind_version() -> str | None:
    """Valgrind's version ("valgrind-3.19.0"), or None when it is not installed."""
    if not shutil.which("valgrind"):
        return None
    try:
        done = subprocess.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def faketime_library() -> str | None:
    found = sorted(glob.glob(FAKETIME_LIBRARY))
    return found[0] if found else None


def unavailable() -> str | None:
    """Why this machine cannot count instructions, or None when it can."""
    if valgrind_version() is None:
        return "valgrind is not installed (Debian package valgrind)"
    if not shutil.which("setarch"):
        return "setarch is not installed (Debian package util-linux)"
    if faketime_library() is None:
        return "libfaketime is not installed (Debian package libfaketime)"
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def pinning() -> dict[str, Any]:
    """What the counts of a campaign were taken under; two campaigns' counts compare only if these match."""
    return {"valgrind": valgrind_version(), "tool": "callgrind", "aslr": "off (setarch -R)",
            "glibc_tunables": GLIBC_TUNABLES, "stack_bytes": STACK_BYTES, "wall_clock": f"held at {FAKETIME}",
            "cpu": _cpu_model(), "arch": platform.machine()}


def _strings_size(argv: list[str], env: dict[str, str]) -> int:
    return sum(len(a.encode()) + 1 for a in argv) + sum(len(k.encode()) + len(v.encode()) + 2
                                                        for k, v in env.items())


def command(argv: list[str], env: dict[str, str], out_file: Path) -> tuple[list[str], dict[str, str]]:
    """The execution's command and environment under callgrind, pinned (see the module's doc)."""
    wrapped = ["setarch", platform.machine(), "-R", "valgrind", *CALLGRIND_OPTIONS,
               f"--callgrind-out-file={out_file}", *argv]
    pinned = {k: v for k, v in env.items() if k != PAD} | {"GLIBC_TUNABLES": GLIBC_TUNABLES}
    faketime = faketime_library()
    if faketime:
        preload = " ".join(p for p in (faketime, env.get("LD_PRELOAD")) if p)
        pinned |= {"LD_PRELOAD": preload, "FAKETIME": FAKETIME, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    # The client sees argv (without valgrind's own words) and the environment; pad their total size.
    used = _strings_size(argv, pinned) + len(PAD) + 2
    if used > STACK_BYTES:
        raise CountingError(f"the command and environment take {used} bytes, more than the {STACK_BYTES} "
                            "their size is pinned to")
    pinned[PAD] = "x" * (STACK_BYTES - used)
    return wrapped, pinned


_SUMMARY = re.compile(r"^summary:\s+(\d+)", re.MULTILINE)
_EVENTS = re.compile(r"^events:\s+(\S+)", re.MULTILINE)


def parse(text: str, iterations: int) -> list[float]:
    """Each iteration's instruction count from callgrind's combined dumps: one part an iteration (the probe
    dumps after each), then the part of the process's exit."""
    events = _EVENTS.findall(text)
    if not events:
        raise CountingError("callgrind wrote no profile")
    if any(e != "Ir" for e in events):
        raise CountingError(f"callgrind counted {events[0]}, not Ir")
    parts = [float(n) for n in _SUMMARY.findall(text)]
    if len(parts) <= 1:
        raise CountingError("the probe does not bracket its iterations for callgrind (no client requests: "
                            "a probe built without valgrind's header, or one that has none)")
    if len(parts) != iterations + 1:
        raise CountingError(f"callgrind saw {len(parts) - 1} bracketed iterations, expected {iterations}")
    return parts[:-1]


def counts(out_file: Path, iterations: int) -> list[float]:
    """parse() of the file callgrind wrote (it is removed afterwards)."""
    try:
        text = out_file.read_text(errors="replace")
    except OSError as e:
        raise CountingError(f"callgrind wrote no profile ({e.strerror})") from None
    finally:
        out_file.unlink(missing_ok=True)
    return parse(text, iterations)
