"""Capture the machine a campaign ran on, and say what makes it noisy (`bridgebench doctor`).

Capture, don't pretend to control: nothing here changes the machine.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import platform
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridgebench import __version__
from bridgebench.study import REPO_ROOT


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key and key not in info:
            info[key] = value.strip()
    return info


def _virtualisation(cpu_flags: str) -> str:
    if shutil.which("systemd-detect-virt"):
        done = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True)
        if done.stdout.strip():
            return done.stdout.strip()
    if "hypervisor" in cpu_flags.split():
        vendor = _read("/sys/class/dmi/id/sys_vendor") or "unknown hypervisor"
        return f"yes ({vendor})"
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return "container"
    return "none detected"


def _turbo() -> str:
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return "off" if no_turbo == "1" else "on"
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost is not None:
        return "on" if boost == "1" else "off"
    return "unknown (not exposed)"


def _booted() -> str | None:
    """When this (virtual) machine booted, in UTC, from /proc/stat; None where it cannot be read."""
    for line in (_read("/proc/stat") or "").splitlines():
        if line.startswith("btime "):
            return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(int(line.split()[1])))
    return None


def _signature(cpu: dict[str, str]) -> str | None:
    """The CPU's family, model and stepping and its microcode, as /proc/cpuinfo gives them; None where absent."""
    parts = [f"{k} {cpu[k]}" for k in ("cpu family", "model", "stepping", "microcode") if cpu.get(k)]
    return ", ".join(parts) or None


def git_sha() -> str:
    try:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True)
    except OSError:
        return "unknown"
    sha = done.stdout.strip() or "unknown"
    return sha + ("-dirty" if dirty.stdout.strip() else "")


def capture() -> dict[str, Any]:
    cpu = _cpuinfo()
    governors = sorted({_read(str(p)) or "?" for p in
                        Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")})
    mem_kb = next((int(ln.split()[1]) for ln in (_read("/proc/meminfo") or "").splitlines()
                   if ln.startswith("MemTotal:")), 0)
    return {
        "host_id": host_id(),
        "hostname": platform.node(),
        "cpu_model": cpu.get("model name", platform.processor() or "unknown"),
        "cpu_count": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "os": (_read("/etc/debian_version") and f"Debian {_read('/etc/debian_version')}") or platform.platform(),
        "governor": ",".join(g for g in governors if g) or "unknown (no cpufreq)",
        "turbo": _turbo(),
        "aslr": {"0": "off", "1": "partial", "2": "full"}.get(_read("/proc/sys/kernel/randomize_va_space") or "",
                                                              "unknown"),
        "virtualisation": _virtualisation(cpu.get("flags", "")),
        "load_average": list(os.getloadavg()),
        # A VM booted again may run on another host, at another speed (docs/methodology.md §8); the CPU's
        # signature tells hosts apart where the model name is generic ("AMD EPYC").
        "booted": _booted(),
        "cpu_signature": _signature(cpu),
        "python": platform.python_version(),
        "bridgebench": __version__,
    }


def host_id() -> str:
    """This host's own identity, which containers do not make generic as they do the hostname:
    BRIDGEBENCH_MACHINE_ID if set (tests simulating a second machine), else /etc/machine-id, else an id
    generated once and kept in the user's config folder."""
    chosen = os.environ.get("BRIDGEBENCH_MACHINE_ID", "").strip()
    if chosen:
        return chosen
    system = (_read("/etc/machine-id") or "").strip()
    if system:  # systemd asks that the id itself not be shown to others: a keyed hash of it is
        return hashlib.sha256(f"bridgebench:{system}".encode()).hexdigest()[:16]
    kept = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "bridgebench" / "machine-id"
    try:
        return kept.read_text().strip()
    except OSError:
        made = uuid.uuid4().hex
        with contextlib.suppress(OSError):
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(made + "\n")
        return made


def machine_id(env: dict[str, Any]) -> str:
    """What must match for two campaigns to count as the same machine: the host's id, CPU model, cores and
    memory (the kernel is recorded beside it, not part of it: an upgrade does not make another machine).
    Campaigns stored before this rule carry a hostname-based id, so they compare as another machine."""
    key = f"{env.get('host_id')}|{env.get('cpu_model')}|{env.get('cpu_count')}|{env.get('memory_gib')}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


BALLOON_REPORTING = 5  # VIRTIO_BALLOON_F_REPORTING: the guest hands the pages it frees back to the host


def memory_taken_back(sys_root: Path = Path("/sys")) -> list[str]:
    """What takes memory back from a process between its uses, as the kernel shows it: DAMON running a
    `pageout` scheme (without swap, it drops idle page cache: a program not run for a while reads its pages
    back from disk as it starts), and a virtio balloon that reports freed pages to the host (memory touched
    again after a free is backed anew by the host). Empty where neither is seen."""
    found = []
    for state in sorted(sys_root.glob("kernel/mm/damon/admin/kdamonds/*/state")):
        actions = {_read(str(a)) for a in state.parent.glob("contexts/*/schemes/*/action")}
        if _read(str(state)) == "on" and "pageout" in actions:
            found.append(f"DAMON pages out idle memory (kdamond {state.parent.name})")
    for features in sorted(sys_root.glob("bus/virtio/drivers/virtio_balloon/virtio*/features")):
        bits = _read(str(features)) or ""
        if len(bits) > BALLOON_REPORTING and bits[BALLOON_REPORTING] == "1":
            found.append(f"the virtio balloon reports freed pages to the host ({features.parent.name})")
    return found


STEAL_ACCOUNTING = "CONFIG_PARAVIRT_TIME_ACCOUNTING"


def steal_time(proc_root: Path = Path("/proc"), boot: Path = Path("/boot")) -> tuple[float | None, bool | None]:
    """The share of all CPU time since boot that the hypervisor took for others (steal, /proc/stat), and
    whether the kernel keeps it out of processes' CPU time (built with CONFIG_PARAVIRT_TIME_ACCOUNTING, read
    from /proc/config.gz or /boot/config-RELEASE): a wall clock always holds steal, a CPU clock then does not,
    so a ratio of CPU times leaves it out and a CPU time over a wall time does not. None where unknown."""
    fields = next((ln.split()[1:] for ln in (_read(str(proc_root / "stat")) or "").splitlines()
                   if ln.startswith("cpu ")), [])
    ticks = [int(f) for f in fields if f.isdigit()]
    share = ticks[7] / sum(ticks[:8]) if len(ticks) >= 8 and sum(ticks[:8]) else None
    config = None
    with contextlib.suppress(OSError, EOFError, gzip.BadGzipFile):
        config = gzip.decompress((proc_root / "config.gz").read_bytes()).decode(errors="replace")
    if config is None:
        config = _read(str(boot / f"config-{platform.release()}"))
    kept_out = None if config is None else f"{STEAL_ACCOUNTING}=y" in config.splitlines()
    return share, kept_out


@dataclass(frozen=True)
class Advice:
    """One of `doctor`'s findings about this machine: a topic, its state, whether it is fine, and what to do."""
    topic: str
    state: str
    ok: bool
    advice: str


def doctor(env: dict[str, Any] | None = None) -> list[Advice]:
    env = env or capture()
    cores = env["cpu_count"] or 1
    load1 = env["load_average"][0]
    findings = [
        Advice("CPU", f"{env['cpu_model']} × {cores}", cores >= 4,
               "with fewer than 4 cores the harness, the benchmark and the OS share cores; expect noise"
               if cores < 4 else ""),
        Advice("frequency governor", env["governor"], env["governor"] == "performance",
               "" if env["governor"] == "performance" else
               "set 'performance' (cpupower frequency-set -g performance) where the machine allows it"),
        Advice("turbo boost", env["turbo"], env["turbo"] == "off",
               "" if env["turbo"] == "off" else
               "turbo makes speed depend on temperature; disable it (intel_pstate/no_turbo=1) if you can"),
        Advice("ASLR", env["aslr"], env["aslr"] == "off",
               "" if env["aslr"] == "off" else "address randomisation varies layout per process: keep it "
               "on to sample that variation (as here), or off (setarch -R) to remove it; know which"),
        Advice("virtualisation", env["virtualisation"], env["virtualisation"] in ("none", "none detected"),
               "" if env["virtualisation"] in ("none", "none detected") else
               "a VM shares its host: other tenants and steal time add noise; prefer bare metal for final runs"),
        Advice("load average (1 min)", f"{load1:.2f}", load1 < 0.5 * cores,
               "" if load1 < 0.5 * cores else "other work is running; results will be noisier"),
    ]
    share, kept_out = steal_time()
    said = ("not reported" if share is None else f"{share:.2%} of CPU time since boot") + (
        "" if kept_out is None else ", kept out of CPU times" if kept_out else ", counted in CPU times")
    fine = kept_out is not False and (share or 0) < 0.01
    findings.append(Advice("steal time", said, fine, "" if fine else
                           "the hypervisor runs others on this machine's CPUs: wall times hold the stolen time"
                           + ("" if kept_out else ", and so do CPU times (the kernel was built without "
                              f"{STEAL_ACCOUNTING})")))
    taken = memory_taken_back()
    findings.append(Advice("memory taken back", "; ".join(taken) or "nothing seen", not taken,
                           "a process started after a pause reads its pages back (major faults), and memory "
                           "freed and touched again may be backed anew: start-up times and the first iterations "
                           "carry it, steady iterations that allocate nothing new do not" if taken else ""))
    return findings
