"""Starting a child process on one CPU. A fork inherits the calling thread's affinity, so the thread takes the
CPU for the spawn alone and gives it back at once: the harness's own threads (and any started afterwards)
keep off the CPU the child measures on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def spawning_on(cpu: int | None) -> Iterator[None]:
    """Within the block, children start on `cpu` (None: wherever the harness may run); afterwards the thread's
    own affinity is back, whatever happened."""
    mine = os.sched_getaffinity(0)
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        yield
    finally:
        os.sched_setaffinity(0, mine)
