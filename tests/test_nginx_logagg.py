"""The nginx-logagg study (issue #25) with its real parts: nginx and its Lua module unpacked from Debian's
packages, OpenResty's luajit2, the Go collector. Each server's own totals are held against what the load
driver saw answered (bridgebench/loadtest/totals.py); a dictionary made too small must show lost counts; the
driver's ceiling and the rows that share cores with the driver are labelled; and no nginx outlives a
test, a failure inside a run, or Ctrl-C. Builds go to the repository's build folder, shared with
`bridgebench load`; the runs last well under a second each and no assertion depends on the machine's
speed (which rows are limited by the driver is this machine's, so only the rule is asserted)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridgebench.build import build_study
from bridgebench.campaign.loadtest import run_totals, server_for, write_spec
from bridgebench.loadtest import analysis, driver, totals
from bridgebench.loadtest.analysis import LIMITED_BY_DRIVER
from bridgebench.loadtest.server import Server
from bridgebench.study import read_study
from tests.conftest import REPO, bridgebench, start_bridgebench, wait_for_executions

STUDY = REPO / "studies" / "nginx-logagg"
BUILD = REPO / "build"
COUNTING = ("file", "shared", "local", "ship")


def nginx_processes(build_root: Path) -> list[int]:
    """nginx processes (masters and workers, whatever their title says) and collectors run from this
    study's builds under build_root."""
    found = []
    ours = str((build_root / "nginx-logagg").resolve())
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(entry / "exe").startswith(ours):
                    found.append(int(entry.name))
    return found


def left_behind(build_root: Path, bound_s: float = 30) -> list[int]:
    """What is still running after cleanup has had `bound_s` to act (a bound on a wait, not a speed claim),
    killed so that it cannot spoil the next test."""
    deadline = time.monotonic() + bound_s
    while (found := nginx_processes(build_root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One quick load campaign of every server: each phase once, short runs."""
    out = tmp_path_factory.mktemp("logagg")
    done = bridgebench("load", "nginx-logagg", "--quick", "--warmup", "0.2", "--duration", "0.5", "--store",
                       str(out / "s.sqlite"), "--report-dir", str(out), "--json", cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr
    assert left_behind(BUILD) == []
    report = json.loads(done.stdout)
    report["markdown"] = (out / "nginx-logagg-1.md").read_text()
    return report


def test_every_counting_server_counts_each_check_request_exactly(quick: dict) -> None:
    rows = {r["mechanism"]: r for r in quick["check"] if r["benchmark"] == "totals"}
    assert {m for m, r in rows.items() if r["status"] == "agrees" and r["answer"] == "3 of 3"} == {
        *COUNTING, "shared-2w"}
    assert rows["none"]["answer"] == "counts nothing"
    assert "ceiling" not in rows  # it answers 204 to everything: it measures the driver, not the study


def test_after_each_run_the_shared_dictionary_holds_every_answer(quick: dict) -> None:
    for cell in quick["cells"]:
        if cell["mechanism"] in ("shared", "local", "shared-2w", "file"):
            assert cell["lost"] == 0 and not cell["totals_errors"], cell
            run = cell["per_execution"][0]
            assert run["lost"] == 0 and run["server_us"] > 0
        elif cell["mechanism"] in ("none", "ceiling"):
            assert cell["lost"] is None


def test_datagrams_the_collector_never_got_are_the_ones_the_server_saw_refused(quick: dict) -> None:
    # Lost answers can only be refused datagrams (the unix socket's queue was full) or none at all; the
    # server's own count of them bounds what the check finds from above.
    for cell in quick["cells"]:
        if cell["mechanism"] == "ship":
            assert cell["lost"] <= cell["server_lost"].get("dropped", 0), cell


def test_the_ceiling_runs_at_saturation_only_and_labels_the_rows_it_holds_back(quick: dict) -> None:
    ceiling = [c for c in quick["cells"] if c["mechanism"] == "ceiling"]
    assert [c["phase"] for c in ceiling] == ["saturation"]
    assert ceiling[0]["ceiling_share"] == 1.0 and ceiling[0]["driver_limited"]
    for cell in quick["cells"]:
        assert cell["driver_limited"] == (cell["ceiling_share"] >= LIMITED_BY_DRIVER)
        assert cell["contended"] == (cell["mechanism"] == "shared-2w")  # CPUs 0-1, the driver on 1
    markdown = quick["markdown"]
    assert "The driver's ceiling:" in markdown and "limited by the driver (100% of its ceiling)" in markdown
    # "[contended]", or "[driver-limited, contended]" where the row also came within 80 % of the ceiling
    assert "contended]" in markdown and "contended (shares cores with the driver)" in markdown
    assert all(r["a"] != "ceiling" and r["b"] != "ceiling" for r in quick["ratios"])


def test_a_cell_with_fewer_than_five_runs_gets_no_interval(quick: dict) -> None:
    for cell in quick["cells"]:
        assert cell["achieved"]["low"] is None and cell["achieved"]["executions"] == 1
    assert "1 of the 5 needed" in quick["markdown"]


def test_a_dictionary_too_small_for_the_keys_shows_counts_lost(tmp_path: Path) -> None:
    # 300 paths, 3 keys a request at most, into the smallest dictionary nginx allows: keys are evicted, and
    # the server's totals fall short of what the driver saw answered.
    study = tmp_path / "nginx-logagg"
    shutil.copytree(STUDY, study, ignore=shutil.ignore_patterns("results"))
    text = (study / "study.toml").read_text()
    head, _, _ = text.partition("[load.requests.page]")
    requests = "".join(f'[load.requests.p{n}]\nmethod = "GET"\npath = "/k/{n}"\nexpect_status = 200\n\n'
                       for n in range(300))
    server = ('[mechanisms.tiny]\ndebian = ["dpkg", "libpcre3", "lua-cjson"]\ncommands = ["apt-get", "dpkg-deb"]\n'
              'build = ["{root}/studies/openapi-validate/nginx/setup.sh {build}/nginx"]\n'
              'serve = ["nginx/serve.sh", "{build}", "shared", "1", "{port}"]\nready = "/ready"\ncpus = "0"\n'
              'env = { BB_DICT_SIZE = "12k" }\n')
    (study / "study.toml").write_text(head.replace('ceiling = "ceiling"\n', "").replace('baseline = "none"',
                                                                                       'baseline = "tiny"')
                                      + requests + server)
    build_root = tmp_path / "build"
    done = bridgebench("load", str(study), "--quick", "--warmup", "0.2", "--duration", "0.5", "--store",
                       str(tmp_path / "s.sqlite"), "--report-dir", str(tmp_path), "--build-dir", str(build_root),
                       "--json", cwd=tmp_path, timeout=600)
    # The check itself sends each path once: 300 paths do not fit, so it fails before anything is timed.
    assert done.returncode != 0 and "nothing was timed" in done.stderr
    assert "totals on tiny: disagrees" in done.stderr and "dict_evictions" in done.stderr

    # Under load, the run's own totals (what `bridgebench load` stores after every run) show the loss too.
    loaded = read_study(study)
    built = build_study(loaded, build_root, ["tiny"])["tiny"]
    assert loaded.load is not None and loaded.load.totals
    with server_for(loaded, built) as server:
        result = driver.run(write_spec(loaded, tmp_path), server, rate=0, connections=8, warmup_s=0.2, duration_s=0.5)
        got = run_totals(loaded, server, result)
    assert got is not None and got["lost"] > 0 and got["server_lost"].get("dict_evictions", 0) > 0, got
    assert got["lost"] <= result["answered"]
    assert left_behind(build_root) == []


def test_totals_compare_flags_lost_and_double_counts() -> None:
    def compare(counts: dict | None, lost: dict | None = None) -> totals.Totals | None:
        return totals.compare({"counts": counts, "lost": lost or {}}, answered_variants={"a": 8, "b": 2},
                              attempted_variants={"a": 9, "b": 2}, answered_statuses={"200": 8, "404": 2},
                              variant_paths={"a": "/a?x=1", "b": "/b"})

    exact = compare({"status": {"200": 8, "404": 2}, "path": {"/a": 8, "/b": 2}, "client": {"c": 10}})
    assert exact is not None and exact.exact and exact.in_flight == 1
    in_flight = compare({"status": {"200": 9, "404": 2}, "path": {"/a": 9, "/b": 2}, "client": {"c": 11}})
    assert in_flight is not None and in_flight.exact  # the request still in flight may have been counted
    short = compare({"status": {"200": 5, "404": 2}, "path": {"/a": 5, "/b": 2}, "client": {"c": 7}},
                    {"dict_evictions": 4})
    assert short is not None and (short.lost, short.over, short.server_lost) == (3, 0, {"dict_evictions": 4})
    twice = compare({"status": {"200": 16, "404": 2}, "path": {"/a": 16, "/b": 2}, "client": {"c": 18}})
    assert twice is not None and (twice.lost, twice.over) == (0, 7)
    no_path = compare({"status": {"200": 8, "404": 2}})
    assert no_path is not None and no_path.lost == 10  # a server that counts must count by path too
    assert compare(None) is None


def test_contended_means_the_server_may_share_a_core_with_the_driver() -> None:
    assert analysis.contended("0-1", "1") and analysis.contended("0", None) and analysis.contended(None, "1")
    assert not analysis.contended("0", "1") and not analysis.contended("0,2", "1,3")


@pytest.fixture(scope="module")
def builds() -> dict[str, Path]:
    built = build_study(read_study(STUDY), BUILD, ["shared"])
    assert built["shared"].available, built["shared"].reason
    return {m: b.build_dir for m, b in built.items()}


def test_a_failure_inside_a_run_leaves_no_nginx(builds: dict[str, Path]) -> None:
    study = read_study(STUDY)
    built = build_study(study, BUILD, ["shared"])["shared"]
    with pytest.raises(RuntimeError), server_for(study, built) as server:
        assert isinstance(server, Server) and nginx_processes(BUILD)
        raise RuntimeError("a failure while nginx serves")
    assert left_behind(BUILD) == []


@contextlib.contextmanager
def interrupted_campaign(tmp_path: Path) -> Iterator[int]:
    store = tmp_path / "s.sqlite"
    proc = start_bridgebench("load", "nginx-logagg", "--quick", "--mechanisms", "shared,ship", "--store", str(store),
                             "--report-dir", str(tmp_path), cwd=REPO)
    try:
        wait_for_executions(store, 2, timeout=300)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        yield proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ctrl_c_during_a_load_campaign_leaves_no_nginx_nor_collector(builds: dict[str, Path], tmp_path: Path) -> None:
    with interrupted_campaign(tmp_path) as code:
        assert code == 130
    assert left_behind(BUILD) == []


def test_totals_still_catching_up_are_waited_for_and_a_stable_shortfall_is_lost() -> None:
    # A real server on 127.0.0.1 whose counts grow by 4 with each read up to a limit: a collector draining
    # its queue after the run. Whatever the machine's speed, reads are what move it.
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    reads = {"n": 0}
    limit = {"n": 10}

    class Totals(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            counted = min(2 + 4 * reads["n"], limit["n"])
            reads["n"] += 1
            body = json.dumps({"counts": {"status": {"200": counted}, "path": {"/a": counted}}, "lost": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Totals)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def judge(doc: dict) -> totals.Totals | None:
        return totals.compare(doc, answered_variants={"a": 10}, attempted_variants={"a": 10},
                              answered_statuses={"200": 10}, variant_paths={"a": "/a"})

    try:
        port = server.server_address[1]
        caught_up = totals.settled(port, "/t", 0, judge)
        assert caught_up is not None and caught_up.exact and reads["n"] == 3  # 2, 6, then all 10
        reads["n"], limit["n"] = 0, 7
        short = totals.settled(port, "/t", 0, judge)
        assert short is not None and short.lost == 3 and reads["n"] == 4  # 2, 6, 7, 7: stable, so lost
    finally:
        server.shutdown()
        server.server_close()


def test_a_study_of_servers_only_points_run_to_load(tmp_path: Path) -> None:
    done = bridgebench("run", "nginx-logagg", "--store", str(tmp_path / "s.sqlite"), cwd=REPO)
    assert done.returncode == 2 and done.stderr.strip() == (
        "error: nginx-logagg has no benchmarks timed in iterations, only servers: use `bridgebench load nginx-logagg`")


def test_check_checks_a_study_of_servers_only(tmp_path: Path) -> None:
    # `check` asks each server what `load` asks it first (every request's status, and the totals it keeps),
    # and stops every nginx and collector it started.
    done = bridgebench("check", "nginx-logagg", "--mechanisms", "none,shared", "--build-dir", str(BUILD), "--json",
                       cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {r["mechanism"] for r in rows} == {"none", "shared"} and all(r["status"] == "agrees" for r in rows)
    assert {r["benchmark"] for r in rows} >= {"totals"}
    assert left_behind(BUILD) == []


def test_the_shipping_server_counts_from_a_build_folder_deeper_than_a_sockets_path_holds(tmp_path: Path) -> None:
    """The collector's sockets live in a short folder of their own in /tmp, not under the build folder, so a
    repository cloned deep still ships and counts; and that folder goes when the server does."""
    deep = tmp_path / ("d" * 120)
    before = set(Path("/tmp").glob("bb-logagg-*"))
    done = bridgebench("check", "nginx-logagg", "--mechanisms", "ship", "--build-dir", str(deep), "--json",
                       cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr
    rows = {(r["benchmark"], r["mechanism"]): r for r in json.loads(done.stdout)}
    assert (rows[("totals", "ship")]["status"], rows[("totals", "ship")]["answer"]) == ("agrees", "3 of 3")
    assert left_behind(deep) == []
    assert set(Path("/tmp").glob("bb-logagg-*")) <= before


def test_the_next_run_sweeps_a_killed_runs_prefix_and_its_sockets_folder(tmp_path: Path) -> None:
    """A run killed outright (SIGKILL) removes nothing; the next serve.sh in that build folder removes its prefix
    (its nginx gone) and the sockets' folder the prefix names, before it starts (here it stops at a bad mode)."""
    stale = tmp_path / "run" / "nginx-1-abcdef"
    stale.mkdir(parents=True)
    sockets = Path(tempfile.mkdtemp(prefix="bb-logagg-", dir="/tmp"))
    (stale / "sockets").write_text(f"{sockets}\n")
    (stale / "nginx.pid").write_text("999999999\n")  # no such process
    try:
        done = subprocess.run(["bash", str(STUDY / "nginx" / "serve.sh"), str(tmp_path), "bogus", "1", "1"],
                              capture_output=True, text=True, timeout=60)
        swept = not stale.exists() and not sockets.exists()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    assert done.returncode == 2 and "unknown mode bogus" in done.stderr
    assert swept
