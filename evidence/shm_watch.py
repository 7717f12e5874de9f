"""A log of the System V shared memory segments made and removed while it runs, each with its size and the command
line of the process that made it: what to run beside the test suite when a test finds a segment left behind (GT.M
keeps its databases in such segments, and a client killed outright leaves its own).

    .venv/bin/python evidence/shm_watch.py LOG [--every 0.2]

Runs until stopped; `ipcs -m` is read every `--every` seconds, so a segment that lives shorter is not seen. A line
`new ID key=… bytes=… nattch=… cpid=… cmd=…` (cmd "(gone)": its maker had exited when it was seen) or `gone ID`.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path


def segments() -> dict[str, tuple[str, str, str, str]]:
    """Per segment id: its key, bytes, attached processes and creator's pid."""
    def rows(*flags: str) -> list[list[str]]:
        out = subprocess.run(["ipcs", "-m", *flags], capture_output=True, text=True).stdout
        return [line.split() for line in out.splitlines()]

    creators = {f[0]: f[2] for f in rows("-p") if len(f) >= 4 and f[0].isdigit()}
    return {f[1]: (f[0], f[4], f[5], creators.get(f[1], "?")) for f in rows() if f and f[0].startswith("0x")}


def command_line(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").replace("\n", " ").strip()[:300]
    except OSError:
        return "(gone)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--every", type=float, default=0.2)
    args = ap.parse_args()
    seen: set[str] = set()
    with args.log.open("a", buffering=1) as log:
        while True:
            now, found = time.strftime("%H:%M:%S"), segments()
            for sid, (key, size, attached, cpid) in found.items():
                if sid not in seen:
                    log.write(f"{now} new {sid} key={key} bytes={size} nattch={attached} cpid={cpid} "
                              f"cmd={command_line(cpid)}\n")
            for sid in seen - set(found):
                log.write(f"{now} gone {sid}\n")
            seen = set(found)
            time.sleep(args.every)


if __name__ == "__main__":
    main()
