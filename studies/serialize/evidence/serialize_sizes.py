"""The serialize study's sizes (studies/serialize/README.md): per codec and message, bytes per message, bytes
per message after gzip level 1 over all N written one after another (as a log shipper compresses its
stream), and the Lua heap encoding and decoding one message allocate once warm, on each VM.

Builds the study's mechanisms (cached, as `bridgebench build serialize`), runs studies/serialize/footprint.lua
with each available mechanism's VM and environment, and prints a Markdown table a message. Nothing here is
timed; a mechanism that is unavailable is listed with its reason.

    .venv/bin/python studies/serialize/evidence/serialize_sizes.py \
        [--messages 1000] [--build-dir build] [--mechanisms a,b]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from bridgebench.build import build_study, build_values, mechanism_env
from bridgebench.placeholders import expand
from bridgebench.study import find_study, read_study

MESSAGES = ("log", "addressbook")


def gzip1(data: bytes) -> int:
    """Bytes of data compressed by gzip at level 1 (zlib's deflate, gzip framing)."""
    packer = zlib.compressobj(level=1, wbits=31)
    return len(packer.compress(data) + packer.flush())


def footprint(vm: str, env: dict[str, str], footprint_lua: Path, codec: str, message: str,
              n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "messages"
        done = subprocess.run([vm, str(footprint_lua), codec, message, str(n), str(out)], env=env,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"footprint.lua failed for {codec} on {message}: "
                             f"{(done.stderr.strip().splitlines() or ['no message'])[-1]}")
        figures = json.loads(done.stdout)
        figures["gzip_bytes"] = gzip1(out.read_bytes())
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000, help="messages of each kind (default 1000)")
    parser.add_argument("--build-dir", type=Path, default=Path("build"), help="the builds' folder (default build)")
    parser.add_argument("--mechanisms", help="comma-separated mechanisms (default: all of the study's)")
    args = parser.parse_args(argv)
    study = read_study(find_study("serialize"))
    chosen = args.mechanisms.split(",") if args.mechanisms else list(study.mechanisms)
    unknown = sorted(set(chosen) - set(study.mechanisms))
    if unknown:
        raise SystemExit(f"serialize_sizes: no mechanism {', '.join(unknown)} in the serialize study")
    builds = build_study(study, args.build_dir.resolve(), chosen)
    rows: dict[str, list[str]] = {m: [] for m in MESSAGES}
    unavailable = []
    for name, build in builds.items():
        mech = study.mechanisms[name]
        if not build.available:
            unavailable.append(f"- {name}: {build.reason}")
            continue
        values = build_values(study, build.build_dir)
        env = mechanism_env(mech, values)
        vm = expand(mech.run[0], values)
        codec = env["SERIALIZE_CODEC"]
        for message in MESSAGES:
            f = footprint(vm, env, study.dir / "footprint.lua", codec, message, args.messages)
            n = f["messages"]
            rows[message].append(f"| {name} | {f['bytes'] / n:.1f} | {f['gzip_bytes'] / n:.1f} | "
                                 f"{f['encode_heap_bytes']:.0f} | {f['decode_heap_bytes']:.0f} |")
    for message in MESSAGES:
        print(f"\n### {message}: {args.messages} messages\n")
        print("| mechanism | bytes / message | gzip -1, bytes / message | Lua heap to encode, bytes | "
              "Lua heap to decode, bytes |")
        print("|---|---:|---:|---:|---:|")
        print("\n".join(rows[message]))
    if unavailable:
        print("\nUnavailable:\n" + "\n".join(unavailable))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
