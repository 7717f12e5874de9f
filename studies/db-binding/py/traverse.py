"""The python-ctypes mechanism: count the first PARAM nodes of ^BCAT("lvd",*) and sum their subscripts from
Python, one GT.M call-in per node (next^bbci) through ctypes, as a Python user without a compiled extension
would. Usage: traverse.py ITERATIONS PARAM; prints one bridgebench/1 line."""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: traverse.py ITERATIONS PARAM", file=sys.stderr)
        return 2
    iterations, limit = int(sys.argv[1]), int(sys.argv[2])
    t_setup = time.perf_counter()
    gtm = ctypes.CDLL(os.path.join(os.environ["gtm_dist"], "libgtmshr.so"))
    message = ctypes.create_string_buffer(512)

    def check(status: int, what: str) -> None:
        if status != 0:
            gtm.gtm_zstatus(message, len(message))
            raise SystemExit(f"traverse.py: {what} failed ({status}): {message.value.decode(errors='replace')}")

    check(gtm.gtm_init(), "gtm_init")
    setup_s = time.perf_counter() - t_setup
    next_ci, out = gtm.gtm_ci, ctypes.create_string_buffer(256)
    times, cpu, answers = [], [], set()
    for _ in range(iterations):
        c0 = time.process_time()
        t0 = time.perf_counter()
        count, total, prev = 0, 0, b""
        while count < limit:
            status = next_ci(b"next", out, prev)
            if status != 0:
                check(status, "gtm_ci(next)")
            prev = out.value
            if not prev:
                break
            count += 1
            total += int(prev)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        answers.add(f"{count} {total}")
    gtm.gtm_exit()
    if len(answers) != 1:
        print("traverse.py: answers differ between iterations", file=sys.stderr)
        return 1
    print(json.dumps({"protocol": "bridgebench/1", "times": times, "answer": answers.pop(),
                      "counters": {"cpu_s": cpu}, "setup_s": setup_s,
                      "vm": f"CPython {sys.version.split()[0]} + ctypes", "clock": "perf_counter"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
