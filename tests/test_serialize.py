"""The serialize study: its Cap'n Proto generator and runtime against Debian's libcapnp and `capnp` tool
(round trips both ways, defaults, empty and absent lists, unions, an empty message), a schema change read
both ways, hostile and truncated messages, the generator's refusals, every mechanism's answer check and the
sizes script. The Lua runs on Debian's LuaJIT with the study's modules, as its mechanisms run it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bridgebench.build import build_study
from bridgebench.campaign.timing import check
from bridgebench.study import STUDIES_DIR, read_study
from tests.conftest import REPO

STUDY_DIR = STUDIES_DIR / "serialize"
GENERATOR = STUDY_DIR / "capnpc_lua.py"


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return build_study(read_study(STUDY_DIR / "study.toml"), tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def capnp(builds: dict) -> Path:
    """The study's Cap'n Proto build (generated Lua modules and the libcapnp shim), as its mechanisms share it
    (build_capnp.sh into {build}/../_capnp)."""
    out = builds["capnp-lua"].build_dir.parent / "_capnp"
    assert (out / "libbbcapnp.so").exists() and (out / "lua" / "log_capnp.lua").exists()
    return out


def luajit(code: str, capnp: Path, *args: str, modules: Path | None = None, timeout: float = 300
           ) -> subprocess.CompletedProcess[str]:
    """Run Lua code on LuaJIT with the study's modules on the path (generated ones from `modules`, by
    default the study's build)."""
    lua_path = ";".join([f"{modules or capnp / 'lua'}/?.lua", f"{STUDY_DIR}/lua/?.lua",
                         "/usr/share/lua/5.1/?.lua", "/usr/share/luajit-2.1.0-beta3/?.lua"])
    env = os.environ | {"LUA_PATH": lua_path, "LUA_CPATH": "/usr/lib/x86_64-linux-gnu/lua/5.1/?.so",
                        "SERIALIZE_CAPNP_LIB": str(capnp / "libbbcapnp.so")}
    return subprocess.run(["luajit", "-", *args], input=code, capture_output=True, text=True, env=env,
                          timeout=timeout)


def ran(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


PRELUDE = r"""
local records = require("records")
local codecs = require("codecs")
local function same(a, b) return records.canonical(a) == records.canonical(b) end
local function must(cond, ...) if not cond then error(table.concat({...}, " "), 0) end end
"""

# Messages for the round trips: (message, name, table, expected table after decoding; nil: the table itself).
CASES = r"""
local cases = {}
for i, r in ipairs(records.log(25)) do cases[#cases + 1] = {"log", "record " .. i, r} end
for i, r in ipairs(records.addressbook(10)) do cases[#cases + 1] = {"addressbook", "book " .. i, r} end
local LOG_DEFAULTS = {timestamp = 0, zoneId = 0, clientPort = 0, method = "GET", status = 200, bytesSent = 0,
  requestTime = 0, ssl = false, cacheStatus = "UNKNOWN", edgeRatio = 1.0, rayId = 0, colo = -1}
cases[#cases + 1] = {"log", "an empty message: every default", {}, LOG_DEFAULTS}
local lists = {}
for k, v in pairs(LOG_DEFAULTS) do lists[k] = v end
lists.headers, lists.tags, lists.uri, lists.upstream = {}, {}, "", {addr = "", status = 0, responseTime = 0,
  attempts = 1}
cases[#cases + 1] = {"log", "empty lists, an empty text and a struct of defaults", lists}
cases[#cases + 1] = {"log", "the defaults written out", {timestamp = 0, zoneId = 0, clientPort = 0,
  method = "GET", status = 200, bytesSent = 0, requestTime = 0, ssl = false, cacheStatus = "UNKNOWN",
  edgeRatio = 1.0, rayId = 0, colo = -1}}
cases[#cases + 1] = {"log", "extremes", {timestamp = 2 ^ 53, zoneId = 4294967295, clientIp = "::1",
  clientPort = 65535, method = "OPTIONS", host = "h", uri = "/\0binary\255", status = 0, bytesSent = 2 ^ 53,
  requestTime = -1.5e-300, ssl = true, cacheStatus = "BYPASS", userAgent = string.rep("x", 5000),
  referer = "", upstream = {addr = "10.0.0.1:80", status = 65535, responseTime = -0.5, attempts = 255},
  headers = {{name = "a", value = ""}, {name = "", value = "b"}}, tags = {"", "t"},
  edgeRatio = 0.0009765625, rayId = 1, colo = -32768}}
cases[#cases + 1] = {"addressbook", "an empty message", {}}
cases[#cases + 1] = {"addressbook", "no people", {people = {}}}
cases[#cases + 1] = {"addressbook", "every kind of employment", {people = {
  {id = 1, name = "Alice", email = "alice@example.com", phones = {{number = "555-1212", type = "MOBILE"}},
   employment = {school = "MIT"}},
  {id = 2, name = "Bob", email = "bob@example.com", phones = {{number = "555-4567", type = "HOME"},
   {number = "555-7654", type = "WORK"}}, employment = {unemployed = "Void"}},
  {id = 4294967295, name = "", phones = {}, employment = {employer = "Example"}},
  {id = 0, employment = {selfEmployed = "Void"}}}}}
"""


def test_the_generated_lua_and_libcapnp_read_each_others_messages(capnp: Path) -> None:
    out = ran(luajit(PRELUDE + CASES + r"""
local impl = {}
for _, m in ipairs({"log", "addressbook"}) do
  impl[m] = {lua = codecs.open("capnp-lua", m), cxx = codecs.open("capnp-cxx", m)}
end
for _, case in ipairs(cases) do
  local m, name, t, expected = case[1], case[2], case[3], case[4] or case[3]
  for writer, w in pairs(impl[m]) do
    local bytes = w.encode(t)
    for reader, r in pairs(impl[m]) do
      local got = r.decode(bytes)
      must(same(got, expected), m, name, "written by", writer, "read by", reader, "as",
           records.canonical(got), "expected", records.canonical(expected))
    end
  end
end
print(#cases .. " cases")
""", capnp))
    assert out.strip() == "42 cases"


def test_debian_capnp_tool_reads_the_generated_luas_messages(capnp: Path, tmp_path: Path) -> None:
    """A third reader: `capnp convert binary:text`, which knows nothing of this study's code."""
    ran(luajit(PRELUDE + CASES + r"""
local out = arg[1]
for _, i in ipairs({39, 42}) do  -- the extremes and every kind of employment
  local m, t = cases[i][1], cases[i][3]
  local f = assert(io.open(out .. "/" .. m .. ".bin", "wb"))
  f:write(codecs.open("capnp-lua", m).encode(t))
  f:close()
end
""", capnp, str(tmp_path)))

    def text(schema: str, root: str, message: str) -> str:
        with (tmp_path / f"{message}.bin").open("rb") as f:
            done = subprocess.run(["capnp", "convert", "binary:text", str(STUDY_DIR / "schema" / schema), root],
                                  stdin=f, capture_output=True, timeout=60, check=True)
        return done.stdout.decode("utf-8", "replace")

    log = text("log.capnp", "HttpLog", "log")
    for field in ('timestamp = 9007199254740992', 'zoneId = 4294967295', 'clientPort = 65535', 'method = options',
                  'status = 0', 'cacheStatus = bypass', 'ssl = true', 'attempts = 255', 'colo = -32768',
                  'tags = ["", "t"]', 'rayId = 1',
                  'headers = [(name = "a", value = ""), (name = "", value = "b")]'):
        assert field in log, (field, log)
    book = text("addressbook.capnp", "AddressBook", "addressbook")
    for person in ('employment = (school = "MIT")', 'employment = (unemployed = void)',
                   'id = 4294967295', 'employment = (employer = "Example")', 'employment = (selfEmployed = void)',
                   'type = work'):
        assert person in book, (person, book)


V2_FIELDS = {  # a new version of log.capnp: a field of each kind, with and without defaults
    "  colo @19 :Int16 = -1;\n": "  colo @19 :Int16 = -1;\n  region @20 :Text;\n  sampleRate @21 :Float64 = 0.5;\n",
    "  attempts @3 :UInt8 = 1;\n": "  attempts @3 :UInt8 = 1;\n  tls @4 :Bool = true;\n",
}


def generate(schema_dir: Path, out: Path) -> subprocess.CompletedProcess[str]:
    schemas = sorted(str(p) for p in schema_dir.glob("*.capnp"))
    request = subprocess.run(["capnp", "compile", "-o-", f"--src-prefix={schema_dir}", *schemas],
                             capture_output=True, timeout=60)
    assert request.returncode == 0, request.stderr.decode()
    return subprocess.run([sys.executable, str(GENERATOR), str(out)], input=request.stdout.decode("latin-1"),
                          capture_output=True, text=True, encoding="latin-1", timeout=120)


def test_after_a_schema_change_old_and_new_code_read_each_others_messages(capnp: Path, tmp_path: Path) -> None:
    v2 = (STUDY_DIR / "schema" / "log.capnp").read_text()
    for old, new in V2_FIELDS.items():
        assert old in v2
        v2 = v2.replace(old, new)
    (tmp_path / "schema").mkdir()
    (tmp_path / "schema" / "log.capnp").write_text(v2)
    assert generate(tmp_path / "schema", tmp_path / "v2").returncode == 0
    assert "sampleRate" in (tmp_path / "v2" / "log_capnp.lua").read_text()

    out = ran(luajit(PRELUDE + r"""
local v1 = require("log_capnp").HttpLog
local v2 = dofile(arg[1] .. "/log_capnp.lua").HttpLog
local cxx = codecs.open("capnp-cxx", "log")  -- libcapnp built from the old schema
local n = 0
for _, old in ipairs(records.log(50)) do
  -- new code, old message: the new fields read as their defaults
  local got = v2.parse(v1.serialize(old))
  must(got.region == nil and got.sampleRate == 0.5, "new fields of an old message:", tostring(got.region),
       tostring(got.sampleRate))
  must(got.upstream == nil or got.upstream.tls == true, "a new field's default inside a nested struct")
  if got.upstream then got.upstream.tls = nil end
  got.region, got.sampleRate = nil, nil
  must(same(got, old), "new code reads an old message differently")
  -- old code (the generated Lua and libcapnp), new message: the old fields, the new ones skipped
  local new = v2.parse(v2.serialize(old))
  new.region, new.sampleRate = "eu-west", 0.25
  if new.upstream then new.upstream.tls = false end
  local bytes = v2.serialize(new)
  must(same(v1.parse(bytes), old), "old Lua code reads a new message differently")
  must(same(cxx.decode(bytes), old), "old libcapnp reads a new message differently")
  local back = v2.parse(bytes)
  must(back.region == "eu-west" and back.sampleRate == 0.25, "the new fields do not come back")
  must(back.upstream == nil or back.upstream.tls == false, "a false Bool whose default is true")
  n = n + 1
end
print(n)
""", capnp, str(tmp_path / "v2")))
    assert out.strip() == "50"


HOSTILE = PRELUDE + r"""
local ffi = require("ffi")
local parse = {log = require("log_capnp").HttpLog.parse, addressbook = require("addressbook_capnp").AddressBook.parse}
local cxx = {log = codecs.open("capnp-cxx", "log"), addressbook = codecs.open("capnp-cxx", "addressbook")}
local function words(list)  -- a message from 32-bit little-endian halves
  local b = ffi.new("uint32_t[?]", #list, list)
  return ffi.string(b, 4 * #list)
end
local function refused(m, bytes)  -- the error of the generated decoder; any other outcome fails the test
  local ok, err = pcall(parse[m], bytes)
  must(not ok, m, "message of", #bytes, "bytes was accepted")
  must(type(err) == "string" and err:find("^capnp: "), "not the decoder's own error:", tostring(err))
  return err
end
"""


def test_every_truncation_of_a_message_is_refused_with_the_decoders_error(capnp: Path) -> None:
    out = ran(luajit(HOSTILE + r"""
local n = 0
for _, m in ipairs({"log", "addressbook"}) do
  for _, t in ipairs(records[m](3)) do
    local bytes = codecs.open("capnp-lua", m).encode(t)
    for len = 0, #bytes - 1 do
      refused(m, bytes:sub(1, len))
      local ok, err = pcall(cxx[m].decode, bytes:sub(1, len))  -- libcapnp refuses them too, without a crash
      must(not ok and err:find("^capnp: "), "libcapnp:", tostring(err))
      n = n + 1
    end
  end
end
print(n)
""", capnp))
    assert int(out) > 3000  # three messages of each kind, every length short of the whole


def test_corrupted_messages_are_read_or_refused_never_a_crash_or_another_error(capnp: Path) -> None:
    out = ran(luajit(HOSTILE + r"""
local state = 20141112
local function draw(n)  -- Park-Miller: the same corruptions on every run
  state = state * 16807 % 2147483647
  return state % n
end
local read, refusals, reasons = 0, 0, {}
for round = 1, 3000 do
  local m = round % 2 == 0 and "log" or "addressbook"
  local t = records[m](1 + draw(5))
  local bytes = codecs.open("capnp-lua", m).encode(t[#t])
  local b = {bytes:byte(1, -1)}
  for _ = 0, draw(4) do b[1 + draw(#b)] = draw(256) end
  local corrupt = string.char(unpack(b))
  local ok, err = pcall(parse[m], corrupt)
  if ok then read = read + 1 else
    must(type(err) == "string" and err:find("^capnp: "), "round", round, "not the decoder's error:", tostring(err))
    refusals = refusals + 1
    reasons[(err:gsub(" at byte %d+", ""):gsub("%d+", "N"))] = true
  end
  local ok2, err2 = pcall(cxx[m].decode, corrupt)
  must(ok2 or err2:find("^capnp: "), "libcapnp, round", round, tostring(err2))
end
local kinds = 0
for _ in pairs(reasons) do kinds = kinds + 1 end
print(read, refusals, kinds)
""", capnp))
    read, refusals, kinds = map(int, out.split())
    assert read + refusals == 3000
    assert read > 0 and refusals > 0 and kinds >= 4  # both outcomes, several ways of being wrong, exercised


def test_hostile_messages_are_refused_by_name(capnp: Path) -> None:
    out = ran(luajit(HOSTILE + r"""
local function expect(m, bytes, what)
  local err = refused(m, bytes)
  must(err:find(what, 1, true), "expected", what, "got", err)
end
expect("log", "", "no header")
expect("log", words({1, 1, 0, 0, 0}), "segments")                          -- two segments
expect("log", words({0, 1000, 0, 0}), "truncated")                         -- a header promising more
expect("log", words({0, 0}), "empty segment")
expect("log", words({0, 1, 2, 0}), "far pointer")                          -- root: a far pointer
expect("log", words({0, 1, 3, 0}), "capability")
expect("log", words({0, 1, 4 * 100, 0x00080000}), "outside the message")  -- root struct past the end
expect("log", words({0, 1, 1, 0}), "list pointer")                         -- root: a list, not a struct
-- Amplification: 2000 Text pointers to one 8 KB text. 3033 words of message would read as 2000 * 1024 words.
local w = {0, 3033, 0, 0x00080000}                                         -- root: no data, 8 pointers
for _ = 1, 7 do w[#w + 1] = 0; w[#w + 1] = 0 end
w[#w + 1] = 1; w[#w + 1] = 6 + 8 * 2000                                    -- tags: 2000 pointers, next word
for k = 0, 1999 do                                                         -- pointer at word 9 + k
  w[#w + 1] = 1 + 4 * (2009 - (9 + k) - 1); w[#w + 1] = 2 + 8 * 8192      -- to the text at word 2009
end
for _ = 1, 1024 * 2 do w[#w + 1] = 0x61616161 end
w[#w] = 0                                                                  -- ends in NUL
local msg = words(w)
must(#msg == 8 + 3033 * 8, "amplification message size", #msg)
expect("log", msg, "traversal limit")
-- The same shape with 3 pointers is an ordinary message: the limit is not a refusal of aliasing as such.
w[20] = 6 + 8 * 3                                                          -- the tags pointer's count
local small = parse.log(words(w))
must(#small.tags == 3 and #small.tags[1] == 8191, "three aliased tags")
print("ok")
""", capnp))
    assert out.strip() == "ok"


@pytest.mark.parametrize(("schema", "why"), [
    ("interface Logger { log @0 (line :Text) -> (); }\nstruct S { a @0 :UInt8; }", "interfaces are not supported"),
    ("struct S { grid @0 :List(List(Int32)); }", "S.grid: lists of lists"),
    ("struct S { name @0 :Text = \"x\"; }", "a pointer field with a default value"),
    ("struct Box(T) { item @0 :T; }", "generic"),
])
def test_the_generator_refuses_what_it_cannot_write_in_one_line(tmp_path: Path, schema: str, why: str) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "bad.capnp").write_text("@0xd0a1e2b3c4f56789;\n" + schema + "\n")
    done = generate(tmp_path / "s", tmp_path / "out")
    assert done.returncode == 1
    assert re.fullmatch(r"capnpc_lua: .+\n", done.stderr) and why in done.stderr, done.stderr
    assert not (tmp_path / "out" / "bad_capnp.lua").exists()


def test_the_generator_refuses_a_request_that_is_not_one(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(GENERATOR), str(tmp_path)], input="not a request\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert re.fullmatch(r"capnpc_lua: capnp cannot read the CodeGeneratorRequest .+\n", done.stderr), done.stderr


def test_every_mechanism_that_builds_agrees_and_the_others_say_why(builds: dict) -> None:
    study = read_study(STUDY_DIR / "study.toml")
    assert {m: b.reason for m, b in builds.items() if not b.available} == {
        "mpack-lua54": "build step 2 failed (exit 1): Debian 12's lua-mpack has modules for Lua 5.1 to 5.3, "
                       "none for 5.4"}
    rows = check(study, builds, tuple(study.benchmarks), 300)
    assert len(rows) == len(study.benchmarks) * (len(study.mechanisms) - 1)
    assert [r for r in rows if r.status != "agrees"] == []


def test_the_sizes_script_tables_each_codec(builds: dict) -> None:
    build_dir = next(iter(builds.values())).build_dir.parent
    script = REPO / "studies" / "serialize" / "evidence" / "serialize_sizes.py"
    done = subprocess.run([sys.executable, str(script), "--messages", "40",
                           "--build-dir", str(build_dir), "--mechanisms", "cjson,capnp-lua,mpack-lua54"],
                          capture_output=True, text=True, timeout=600, cwd=REPO,
                          env=os.environ | {"PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| cjson") or line.startswith("| capnp")]
    assert len(rows) == 4  # two codecs, two messages
    for row in rows:
        raw, gzipped, encode_heap, decode_heap = (float(x) for x in row.strip("|").split("|")[1:])
        assert raw > 0 and gzipped > 0 and encode_heap > 0 and decode_heap > 0, row
    assert "- mpack-lua54: build step 2 failed" in done.stdout
