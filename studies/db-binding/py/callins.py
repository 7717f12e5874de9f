"""The python-ctypes mechanism: the benchmark's operation from Python, one GT.M call-in per node through
ctypes, as a Python user without a compiled extension would. Usage: callins.py ITERATIONS "OP N", OP one of
traverse (next^bbci per node), get (get^bbci per node), set (clear^bbci, set^bbci per node, tally^bbci);
prints one bridgebench/1 line."""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
from collections.abc import Callable

VALUE_BYTES = 1 << 20


class GtmString(ctypes.Structure):
    _fields_ = [("length", ctypes.c_long), ("address", ctypes.c_char_p)]


def main() -> int:
    try:
        iterations = int(sys.argv[1])
        op, n = sys.argv[2].split()
        limit = int(n)
    except (IndexError, ValueError):
        print('usage: callins.py ITERATIONS "traverse|get|set N"', file=sys.stderr)
        return 2
    t_setup = time.perf_counter()
    gtm = ctypes.CDLL(os.path.join(os.environ["gtm_dist"], "libgtmshr.so"))  # noqa: SIM112 (GT.M spells it so)
    message = ctypes.create_string_buffer(512)

    def check(status: int, what: str) -> None:
        if status != 0:
            gtm.gtm_zstatus(message, len(message))
            raise SystemExit(f"callins.py: {what} failed ({status}): {message.value.decode(errors='replace')}")

    check(gtm.gtm_init(), "gtm_init")
    ci = gtm.gtm_ci
    out = ctypes.create_string_buffer(256)
    value_buffer = ctypes.create_string_buffer(VALUE_BYTES)
    value = GtmString(VALUE_BYTES, ctypes.cast(value_buffer, ctypes.c_char_p))

    def traverse() -> str:
        count, total, prev = 0, 0, b""
        while count < limit:
            status = ci(b"next", out, prev)
            if status != 0:
                check(status, "gtm_ci(next)")
            prev = out.value
            if not prev:
                break
            count += 1
            total += int(prev)
        return f"{count} {total}"

    def get() -> str:
        total = 0
        for i in range(1, limit + 1):
            value.length = VALUE_BYTES
            status = ci(b"get", str(i).encode(), ctypes.byref(value))
            if status != 0:
                check(status, "gtm_ci(get)")
            total += int(ctypes.string_at(value_buffer, value.length))
        return f"{limit} {total}"

    def set_() -> str:
        check(ci(b"clear"), "gtm_ci(clear)")
        for i in range(1, limit + 1):
            sub = str(i).encode()
            status = ci(b"set", sub, sub)
            if status != 0:
                check(status, "gtm_ci(set)")
        check(ci(b"tally", out), "gtm_ci(tally)")
        return out.value.decode()

    operations: dict[str, Callable[[], str]] = {"traverse": traverse, "get": get, "set": set_}
    if op not in operations or limit < 1 or iterations < 1:
        print("callins.py: OP must be traverse, get or set, and ITERATIONS and N positive", file=sys.stderr)
        return 2
    run = operations[op]
    setup_s = time.perf_counter() - t_setup
    times, cpu, answers = [], [], set()
    stepped = os.environ.get("BRIDGEBENCH_STEPPED") == "1"  # lock-step blocks: one iteration per "g" on stdin
    if stepped:
        print("bridgebench-stepped/1 ready", flush=True)
    for i in range(iterations):
        if stepped and sys.stdin.buffer.read(1) != b"g":
            print(f"callins.py: stepped mode: expected \"g\" before iteration {i + 1}", file=sys.stderr)
            return 2
        c0 = time.process_time()
        t0 = time.perf_counter()
        answer = run()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        answers.add(answer)
        if stepped:
            print(repr(times[-1]), flush=True)
    gtm.gtm_exit()
    if len(answers) != 1:
        print("callins.py: answers differ between iterations", file=sys.stderr)
        return 1
    print(json.dumps({"protocol": "bridgebench/1", "times": times, "answer": answers.pop(),
                      "counters": {"cpu_s": cpu}, "setup_s": setup_s,
                      "vm": f"CPython {sys.version.split()[0]} + ctypes", "clock": "perf_counter"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
