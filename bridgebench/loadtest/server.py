"""A server mechanism's life: start it on a free port of 127.0.0.1 in its own process group, under the
launcher (so nothing it starts can escape), wait a bounded time until it answers HTTP, and stop it: SIGTERM
to the server, SIGKILL to everything after a grace period, and a check that nothing is left."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bridgebench import audit
from bridgebench.placeholders import expand_all
from bridgebench.runner import STDERR_TAIL, Capture, Running, UsageFile, launcher, popen_wait, stop


class ServerError(Exception):
    """A server that could not be started, never became ready, or left something behind; one line."""


def free_port() -> int:
    """A port nothing listens on now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def session_cpu_s(session: int) -> float:
    """CPU seconds used so far by the processes of a session (their own, and their reaped children's)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == session:  # after the command: state ppid pgrp session ... utime stime ...
                total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total * audit.TICK_S


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Stopped:
    how: str  # "exited on SIGTERM", "killed after the grace period", or "had already exited (status N)"
    stderr_tail: str


class Server:
    """Usage: `with Server(argv, env, cwd, ready_path="/") as server: ...server.port...`; `{port}` in argv and
    env values is replaced by the chosen port."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, *, ready_path: str = "/",
                 ready_timeout_s: float = 30.0, grace_s: float = 5.0) -> None:
        self.port = free_port()
        values = {"port": str(self.port)}
        self.argv = expand_all(argv, values)
        self.env = {k: expand_all([v], values)[0] for k, v in env.items()}
        self.cwd = cwd
        self.ready_path = ready_path
        self.ready_timeout_s = ready_timeout_s
        self.grace_s = grace_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.stopped: Stopped | None = None
        self._stderr: Capture | None = None
        self._usage = UsageFile("bridgebench-server-usage-")  # closed in stop()

    def cpu_s(self) -> float:
        """CPU seconds the server and what it started have used so far (0 before it starts)."""
        return session_cpu_s(self.proc.pid) if self.proc else 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        launch = launcher()
        if launch is None:
            raise ServerError("the launcher cannot be compiled here, and without it a server's descendants "
                              "could escape; see `bridgebench doctor`")
        err_r, err_w = os.pipe()
        try:
            self.proc = subprocess.Popen([str(launch), self._usage.path, *self.argv], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err_w, env=self.env, cwd=self.cwd,
                                         start_new_session=True, pass_fds=(self._usage.fd,))
        except OSError as e:
            os.close(err_r)
            raise ServerError(f"cannot start {self.argv[0]}: {e.strerror}") from e
        finally:
            os.close(err_w)
        self._stderr = Capture(err_r, STDERR_TAIL, keep_tail=True)
        self._stderr.start()

    def _tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.join(0.5)
        return self._stderr.text().strip().replace("\n", " | ")[-300:]

    def wait_ready(self) -> None:
        """Until the server answers an HTTP GET of ready_path (any status: it is up), within the bound."""
        assert self.proc is not None
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            if self.proc.poll() is not None:
                raise ServerError(f"{self.argv[0]} exited with status {self.proc.returncode} before it was "
                                  f"ready: {self._tail() or 'nothing on stderr'}")
            try:
                with urllib.request.urlopen(self.url + self.ready_path, timeout=1.0):
                    return
            except urllib.error.HTTPError:
                return  # it answered
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ServerError(f"{self.argv[0]} did not answer GET {self.url}{self.ready_path} within "
                                  f"{self.ready_timeout_s:g} s; stderr: {self._tail() or 'nothing'}")
            time.sleep(0.05)

    def stop(self) -> Stopped:
        """SIGTERM to the server, SIGKILL to it and all it started after grace_s; ServerError if anything of
        its process group is still there afterwards."""
        if self.stopped:
            return self.stopped
        assert self.proc is not None
        launcher_pid = self.proc.pid
        if self.proc.poll() is not None:
            how = f"had already exited (status {self.proc.returncode})"
        else:
            asked = stop([Running(launcher_pid, True, popen_wait(self.proc))], self.grace_s, self.grace_s)
            self.proc.wait()
            how = "exited on SIGTERM" if asked else "killed after the grace period"
        tail = self._tail()
        self._usage.close()
        deadline = time.monotonic() + self.grace_s
        while _group_alive(launcher_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _group_alive(launcher_pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(launcher_pid, signal.SIGKILL)
            raise ServerError(f"{self.argv[0]} left processes in its group after it was stopped; they were killed")
        self.stopped = Stopped(how, tail)
        return self.stopped
