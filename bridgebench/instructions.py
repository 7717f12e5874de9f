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
- signals on a timer: Go's runtime preempts goroutines with a signal every 10 ms of wall time, landing at
  a different instruction each run, and callgrind 3.19 aborts on some of them (measured on udf-trim: an
  assertion in its signal handling, vgCallgrind_post_signal, in 17 of 90 executions); GODEBUG turns that
  preemption off (other programs ignore the variable);
- Go's threads spinning on one another: valgrind runs one thread at a time, so a Go thread that spins
  waiting for another (idle Ps looking for work, a stop-the-world waiting for every P) counts instructions
  until valgrind switches threads, a matter of time. GOMAXPROCS=1 leaves one P (measured on udf-trim with
  evidence/counts.py: executions of a cell up to ×132 apart, 40 of 60 cells within 10 %; with it, 54 of 60).
  What is left apart comes from single far-off iterations (up to ×215 their execution's median), probably
  the GC pacer, which decides with measured time;
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
GODEBUG = "asyncpreemptoff=1"  # Go's signal-based preemption off (the module's doc says why)
GOMAXPROCS = "1"  # one P: no Go thread spins on another under valgrind's one-at-a-time threads
FAKETIME = "2000-01-01 00:00:00"  # the wall clock every counted execution sees
FAKETIME_LIBRARY = "/usr/lib/*/faketime/libfaketime.so.1"
# Children are traced so that work done in another process is seen (counts() refuses it), not missed.
CALLGRIND_OPTIONS = ("--tool=callgrind", "--trace-children=yes", "--combine-dumps=yes", "--dump-instr=no",
                     "--dump-line=no", "--compress-strings=no", "--compress-pos=no")
OUT_FILE = "callgrind.out.%p"  # callgrind's profile, one a process (%p: its pid)
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
            "glibc_tunables": GLIBC_TUNABLES, "godebug": GODEBUG, "gomaxprocs": GOMAXPROCS,
            "stack_bytes": STACK_BYTES,
            "wall_clock": f"held at {FAKETIME}", "cpu": _cpu_model(), "arch": platform.machine()}


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The pinnings' keys whose values differ ("cpu" among them when only the CPU model does)."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def unlike_here(recorded: dict[str, Any]) -> str | None:
    """Why this machine cannot add counts to a campaign counted under `recorded`, or None: it cannot count,
    or it counts under another pinning (a CPU model of its own is allowed: counts do not follow it, the
    pinning sees to that, and each execution keeps its machine)."""
    why = unavailable()
    if why:
        return f"cannot count instructions: {why}"
    here = pinning()
    differ = [k for k in differences(recorded, here) if k != "cpu"]
    if differ:
        return "it counts under another pinning (" + "; ".join(f"{k}: {here.get(k)} here, {recorded.get(k)} "
                                                              "in the campaign" for k in differ) + ")"
    return None


def _strings_size(argv: list[str], env: dict[str, str]) -> int:
    return sum(len(a.encode()) + 1 for a in argv) + sum(len(k.encode()) + len(v.encode()) + 2
                                                        for k, v in env.items())


def command(argv: list[str], env: dict[str, str], out_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The execution's command and environment under callgrind, pinned (see the module's doc); callgrind
    writes a profile a process into out_dir (counts() reads them)."""
    wrapped = ["setarch", platform.machine(), "-R", "valgrind", *CALLGRIND_OPTIONS,
               f"--callgrind-out-file={out_dir / OUT_FILE}", *argv]
    pinned = {k: v for k, v in env.items() if k != PAD} | {"GLIBC_TUNABLES": GLIBC_TUNABLES}
    pinned["GODEBUG"] = ",".join(p for p in (env.get("GODEBUG"), GODEBUG) if p)  # the last setting wins
    pinned["GOMAXPROCS"] = GOMAXPROCS  # over a mechanism's own: counts are taken with one P
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


_COMMAND = re.compile(r"^cmd:\s*(.*)$", re.MULTILINE)


def _profiles(out_dir: Path) -> list[str]:
    """The profiles callgrind wrote into out_dir, the probe's own process last: it is the one that bracketed
    its iterations, so the one with the most parts."""
    texts = [f.read_text(errors="replace") for f in sorted(out_dir.glob(OUT_FILE.replace("%p", "*")))]
    return sorted(texts, key=lambda t: len(_SUMMARY.findall(t)))


def other_processes(out_dir: Path) -> str | None:
    """What a second process's profile in out_dir says: the mechanism does part of its work elsewhere (an
    RPC plugin's server, a pipe to a helper), where its iterations' brackets do not reach, so its counts
    would leave that work out. None when there is one process."""
    try:
        others = _profiles(out_dir)[:-1]
    except OSError:
        return None
    if not others:
        return None
    names = sorted({(_COMMAND.findall(t) or ["?"])[0].split(" ")[0] for t in others})
    return (f"the mechanism runs part of its work in {len(others)} other process(es) ({', '.join(names)}), "
            "whose instructions the counts of its iterations would leave out")


def counts(out_dir: Path, iterations: int) -> list[float]:
    """parse() of the profile callgrind wrote into out_dir; refused when there is more than one
    (other_processes)."""
    elsewhere = other_processes(out_dir)
    if elsewhere:
        raise CountingError(elsewhere)
    try:
        texts = _profiles(out_dir)
    except OSError as e:
        raise CountingError(f"callgrind wrote no readable profile ({e.strerror})") from None
    if not texts:
        raise CountingError("callgrind wrote no profile")
    return parse(texts[0], iterations)
