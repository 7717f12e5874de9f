"""The README's picture: the top of a real HTML report (its headline and forest plot), as headless Chromium
draws it.

    .venv/bin/python scripts/screenshot.py results/lua-vms-1.html docs/report-top.png [--size 1100,1000]

Chromium comes with `scripts/install.sh --dev`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="an HTML report (bridgebench report N --format html)")
    ap.add_argument("out", type=Path, help="the PNG to write")
    ap.add_argument("--size", default="1100,1000", help="the window, WIDTH,HEIGHT in pixels")
    args = ap.parse_args()
    exe = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if exe is None:
        sys.exit("screenshot: no Chromium (scripts/install.sh --dev installs it)")
    if not args.report.is_file():
        sys.exit(f"screenshot: no report at {args.report}")
    with tempfile.TemporaryDirectory(prefix="bb-chromium-") as profile:
        done = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={args.size}",
                               f"--screenshot={args.out.resolve()}", args.report.resolve().as_uri()],
                              capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not args.out.is_file():
        sys.exit(f"screenshot: Chromium failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
