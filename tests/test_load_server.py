"""A server mechanism's life (bridgebench/loadtest/server.py) with real servers on 127.0.0.1: started on a free
port, ready when it answers HTTP, stopped with SIGTERM or, if it ignores that, SIGKILL after the grace
period, and nothing it started is left; a server that dies or never answers is a one-line error."""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

import pytest

from bridgebench.loadtest.server import Server, ServerError
from tests.conftest import marked_processes, survivors

HTTP_SERVER = [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1"]


def env_with(marker: str) -> dict[str, str]:
    return dict(os.environ) | {"PROBE_MARKER": marker}


def test_a_server_starts_answers_and_stops_on_sigterm(tmp_path: Path, marker: str) -> None:
    (tmp_path / "hello.txt").write_text("hello")
    with Server(HTTP_SERVER, env_with(marker), tmp_path, ready_path="/hello.txt") as server:
        assert server.port > 0
        with urllib.request.urlopen(f"{server.url}/hello.txt", timeout=10) as reply:
            assert reply.read() == b"hello"
        assert marked_processes(marker)
    assert server.stopped is not None and server.stopped.how == "exited on SIGTERM"
    assert survivors(marker) == []


def test_a_server_that_ignores_sigterm_and_hides_a_child_is_killed_whole(tmp_path: Path, marker: str) -> None:
    # The shell ignores SIGTERM, and so does what it starts; one child leaves the process group (setsid).
    script = ("trap '' TERM; setsid sleep 600 & exec " + " ".join(HTTP_SERVER[:3]) + ' "$0" --bind 127.0.0.1')
    with Server(["sh", "-c", script, "{port}"], env_with(marker), tmp_path, grace_s=0.5) as server:
        assert len(marked_processes(marker)) >= 3  # the launcher, the server, the hidden sleep
    assert server.stopped is not None and server.stopped.how == "killed after the grace period"
    assert survivors(marker) == []


def test_a_server_that_dies_before_it_is_ready_is_a_one_line_error(tmp_path: Path, marker: str) -> None:
    with (pytest.raises(ServerError, match=r"exited with status 3 before it was ready: no such config"),
          Server(["sh", "-c", "echo no such config >&2; exit 3"], env_with(marker), tmp_path)):
        pass
    assert survivors(marker) == []


def test_a_server_that_never_answers_is_stopped_after_the_bounded_wait(tmp_path: Path, marker: str) -> None:
    with (pytest.raises(ServerError, match=r"did not answer GET http://127.0.0.1:\d+/ within 1 s"),
          Server(["sleep", "600"], env_with(marker), tmp_path, ready_timeout_s=1)):
        pass
    assert survivors(marker) == []


def test_port_placeholder_reaches_the_environment_too(tmp_path: Path, marker: str) -> None:
    script = 'exec "$PY" -m http.server "$PORT" --bind 127.0.0.1'
    env = env_with(marker) | {"PORT": "{port}", "PY": sys.executable}
    with (Server(["sh", "-c", script], env, tmp_path) as server,
          urllib.request.urlopen(server.url + "/", timeout=10) as reply):
        assert reply.status == 200
    assert survivors(marker) == []
