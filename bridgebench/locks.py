"""Advisory file locks that die with their holder (flock): a campaign is run by one harness at a time.

The kernel drops a flock when its holder exits, however it exits (SIGKILL included), so a lock is never
left stale and nothing has to judge whether a recorded pid is still alive. The holder's pid is written
into the file only so that a refusal can say who holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Protocol


class Lock(Protocol):
    """What a store's lock offers (a FileLock here, an advisory lock in PostgreSQL)."""

    def release(self) -> None: ...

    def __enter__(self) -> Lock: ...

    def __exit__(self, *exc: object) -> None: ...


class Busy(Exception):
    """Someone else holds the lock; the message names the holder's pid where it is known."""


class FileLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, blocking: bool = False) -> FileLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise Busy(f"pid {holder}" if holder.isdigit() else "another process") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing the only descriptor drops the flock
            self.fd = None

    def __enter__(self) -> FileLock:
        return self if self.fd is not None else self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
