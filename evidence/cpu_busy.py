"""Each CPU's busy share while a command runs (from /proc/stat, before and after): whether work queues on one CPU
while another waits, as the test suite's lock-step blocks did when every worker pinned them to the same one.

    .venv/bin/python evidence/cpu_busy.py -- COMMAND [ARG …]

Busy is everything but idle and iowait, over the command's wall time; the command's own exit code is passed on.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def ticks() -> dict[str, tuple[int, int]]:
    """Per CPU (cpu0, cpu1, …): its busy and total ticks so far."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu":
            values = [int(v) for v in fields]
            idle = values[3] + values[4]
            out[name] = (sum(values) - idle, sum(values))
    return out


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: cpu_busy.py -- COMMAND [ARG …]", file=sys.stderr)
        return 2
    before, t0 = ticks(), time.monotonic()
    code = subprocess.run(args).returncode
    after, wall = ticks(), time.monotonic() - t0
    shares = ", ".join(f"{cpu} {(after[cpu][0] - b[0]) / max(1, after[cpu][1] - b[1]):.0%}"
                       for cpu, b in sorted(before.items()) if cpu in after)
    print(f"busy over {wall:.0f} s: {shares}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
