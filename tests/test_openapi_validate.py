"""The openapi-validate study (issue #10, part 2) with its real parts: nginx and its Lua module unpacked
from Debian's packages, OpenResty's luajit2, kin-openapi built as a C shared library, the study's Lua
validator. Correctness first (the agreement corpus, outside nginx and through each nginx), the Lua
validator's JSON-Schema conformance, the Go-before-fork mistake, then the study's quick budget end to end.
Builds go to the repository's build folder, shared with `bridgebench run` and `bridgebench load`."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridgebench.build import build_study
from bridgebench.loadtest import driver
from bridgebench.loadtest.server import Server, ServerError
from bridgebench.study import read_study
from tests.conftest import REPO, bridgebench, survivors

STUDY = REPO / "studies" / "openapi-validate"
BUILD = REPO / "build"
SERVERS = ("none", "lua", "go-body", "go-request")


@pytest.fixture(scope="module")
def builds() -> dict[str, Path]:
    study = read_study(STUDY)
    built = build_study(study, BUILD, [*SERVERS, "go-request-tight"])
    missing = {m: b.reason for m, b in built.items() if not b.available}
    assert not missing, missing
    return {m: b.build_dir for m, b in built.items()}


def cases() -> list[dict]:
    return json.loads((STUDY / "corpus" / "cases.json").read_text())


def luajit2(build: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    root = build / "nginx" / "root"
    return subprocess.run([str(root / "usr/bin/luajit"), *args], capture_output=True, text=True, timeout=120,
                          env=os.environ | {"LD_LIBRARY_PATH": str(root / "usr/lib/x86_64-linux-gnu"),
                                            "LUA_CPATH": "/usr/lib/x86_64-linux-gnu/lua/5.1/?.so"} | (env or {}))


def expected(case: dict, validator: str) -> bool:
    """What a validator must answer: a body-only validator cannot see a bad path, query or header."""
    if validator == "none" or (validator == "go-body" and case["scope"] == "request"):
        return True
    return bool(case["valid"])


# --- correctness before timing -----------------------------------------------------------------------
def test_every_validator_outside_nginx_agrees_on_the_corpus(builds: dict[str, Path]) -> None:
    build = builds["go-request-tight"]
    done = luajit2(build, str(STUDY / "lua" / "agree.lua"), str(STUDY),
                   env={"BB_LIB": str(build / "libbbopenapi.so")})
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["case"] for line in lines] == [c["name"] for c in cases()]
    assert sum(not c["valid"] for c in cases()) >= 25  # one invalid request per constraint kind
    for line in lines:
        for validator, verdict in line["verdicts"].items():
            assert verdict == expected(line, validator), (line["case"], validator)
    assert set(lines[0]["verdicts"]) == {"lua-bbjson", "lua-cjson", "go-body", "go-request"}


@pytest.mark.parametrize("lua", ["lua5.1", "lua5.4"])
def test_the_lua_validator_agrees_on_the_corpus_on_puc_lua_too(lua: str) -> None:
    done = subprocess.run([lua, str(STUDY / "lua" / "agree.lua"), str(STUDY)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(cases())
    assert all(v == expected(line, k) for line in lines for k, v in line["verdicts"].items())
    assert set(lines[0]["verdicts"]) == {"lua-bbjson", "lua-cjson"}  # no Go library named: no Go verdicts


def test_lua_cjson_cannot_tell_an_empty_array_from_an_empty_object(builds: dict[str, Path], tmp_path: Path) -> None:
    """What Debian's lua-cjson costs the Lua validator: `"metadata": []` decodes like `{}`, so a body the
    spec rejects (metadata must be an object) passes; the study's own decoder keeps them apart."""
    body = json.loads((STUDY / "corpus" / "valid.json").read_text()) | {"metadata": []}
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps([{"name": "empty-array-for-object", "scope": "body", "valid": False,
                                  "method": "POST", "path": "/users/42", "query": "limit=10",
                                  "headers": {"Content-Type": "application/json", "X-Request-Id": "x"},
                                  "body": json.dumps(body)}]))
    build = builds["go-request-tight"]
    done = luajit2(build, str(STUDY / "lua" / "agree.lua"), str(STUDY), str(extra),
                   env={"BB_LIB": str(build / "libbbopenapi.so")})
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout.splitlines()[-1])["verdicts"]
    assert verdicts == {"lua-bbjson": False, "lua-cjson": True, "go-body": False, "go-request": False}


def send(port: int, case: dict) -> int:
    body = (STUDY / "corpus" / case["body_file"]).read_bytes()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(case["method"], case["path"] + ("?" + case["query"] if case["query"] else ""), body=body,
                     headers=case["headers"])
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.parametrize("server", SERVERS)
def test_each_nginx_gives_every_corpus_request_the_status_its_validator_owes(builds: dict[str, Path], server: str,
                                                                             marker: str) -> None:
    mode = server
    with Server([str(STUDY / "nginx" / "serve.sh"), str(builds[server]), mode, "1", "{port}"],
                dict(os.environ) | {"PROBE_MARKER": marker}, STUDY, ready_path="/ready") as running:
        got = {c["name"]: send(running.port, c) for c in cases()}
    want = {c["name"]: 200 if expected(c, server) else 400 for c in cases()}
    assert got == want
    assert survivors(marker) == []
    assert not list((builds[server] / "run").glob("nginx-*"))  # the run's prefix is removed when it stops


def test_go_loaded_before_fork_hangs_the_worker_under_load(builds: dict[str, Path], tmp_path: Path,
                                                           marker: str) -> None:
    """The Go library opened in init_by_lua (the master) instead of init_worker_by_lua: the worker forked
    without the Go runtime's threads answers nothing. Mostly it hangs at the first request; now and then
    (1 start in 10 here) it hangs before it answers even the readiness probe, which is the same fault seen
    earlier, and counts as answering nothing. Bounded: the load lasts 2.5 s, the readiness wait 10 s."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"variants": [{"name": "v", "weight": 1, "method": "POST", "path": "/users/42?limit=10",
                                              "headers": {"Content-Type": "application/json", "X-Request-Id": "r"},
                                              "body_file": str(STUDY / "corpus" / "bodies" / "valid.json")}]}))
    results = {}
    for extra in ((), ("--go-in-master",)):
        argv = [str(STUDY / "nginx" / "serve.sh"), str(builds["go-request"]), "go-request", "1", "{port}", *extra]
        try:
            with Server(argv, dict(os.environ) | {"PROBE_MARKER": marker}, STUDY, ready_path="/ready",
                        grace_s=2, ready_timeout_s=10 if extra else 30) as running:
                results[extra] = driver.run(spec, running, rate=0, connections=8, warmup_s=0.5, duration_s=2)
        except ServerError as e:
            if not extra or "did not answer" not in str(e):
                raise
            results[extra] = {"completed": 0}
    assert results[()]["completed"] > 0 and results[()]["statuses"] == {"200": results[()]["completed"]}
    assert results[("--go-in-master",)]["completed"] == 0
    assert survivors(marker) == []


# --- the Lua validator's conformance -----------------------------------------------------------------
@pytest.mark.parametrize("lua", ["lua5.1", "lua5.4", "luajit"])
def test_the_lua_validator_passes_suite_files_on_each_vm(lua: str) -> None:
    files = ["ref.json", "refRemote.json", "type.json", "uniqueItems.json", "patternProperties.json",
             "definitions.json"]
    done = subprocess.run(["bash", str(STUDY / "conformance.sh"), str(BUILD / "openapi-validate"), lua, *files],
                          capture_output=True, text=True, timeout=300, env=os.environ | {"PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert set(result["files"]) == set(files)
    assert result["passed"] == result["total"] > 150, done.stdout  # ref.json alone has 45 tests


# --- the study end to end ----------------------------------------------------------------------------
def test_the_tight_loop_quick_budget_runs_every_validator(tmp_path: Path) -> None:
    done = bridgebench("run", "openapi-validate", "--quick", "--store", str(tmp_path / "s.sqlite"), "--report-dir",
                       str(tmp_path), "--json", cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {(c["benchmark"], c["mechanism"]) for c in report["cells"]} == {
        (b, m) for b in ("valid", "mix") for m in ("lua-tight", "go-body-tight", "go-request-tight")}
    assert {r["answer"] for r in report["check"] if r["benchmark"] == "mix"} == {"accepted 4 of 100"}


def test_the_load_quick_budget_runs_every_phase_on_the_one_worker_servers(tmp_path: Path) -> None:
    done = bridgebench("load", "openapi-validate", "--quick", "--mechanisms", ",".join(("ceiling", *SERVERS)),
                       "--warmup", "0.2", "--duration", "0.5", "--store", str(tmp_path / "s.sqlite"),
                       "--report-dir", str(tmp_path), "--json", cwd=REPO,
                       timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {(c["phase"], c["mechanism"]) for c in report["cells"] if c["ok"] == 1} == {
        (p, m) for p in ("saturation", "rate-25%", "rate-50%", "rate-75%", "rate-90%", "overload-200%")
        for m in SERVERS} | {("saturation", "ceiling")}
    # The study's baseline is a tight-loop mechanism: the servers are compared with the first server that is
    # not the driver's ceiling.
    assert report["baseline"] == "none" and report["ceiling"] == "ceiling"
    assert {r["b"] for r in report["cpu_ratios"]} == {"none"}
    check = {(r["benchmark"], r["mechanism"]): r["answer"] for r in report["check"]}
    assert check["request:invalid", "none"] == "200" and check["request:invalid", "lua"] == "400"
    assert all(c["prediction"] for c in report["cells"] if c["phase"] == "overload-200%")
