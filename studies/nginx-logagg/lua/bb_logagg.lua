-- Log aggregation inside nginx (the Cloudflare post "Pushing Nginx to its limit with Lua"): every request
-- counted per status, per path and per client in the log phase, five ways. serve.sh writes an nginx.conf
-- that calls one of them from log_by_lua; /__totals (content_by_lua, not counted itself) answers what was
-- counted and what the server knows it lost.
--   shared   ngx.shared.DICT:incr per key, on every request (the post's way)
--   local    a per-worker Lua table, added to the shared dictionary by a timer every FLUSH_S
--   ship     one datagram per request over a unix socket to a collector process (collector/main.go)
--   file     nothing in Lua: nginx's own buffered access_log, whose lines /__totals counts
--   none     nothing counted
local M = {}

local ngx = ngx
local FLUSH_S = 0.1
local counted = ngx.shared.logagg -- the counts
local meta = ngx.shared.logagg_meta -- what was lost: kept apart, so evicting counts cannot evict these

local mode, access_log, lines_path, totals_path

function M.init(chosen, paths)
  mode = chosen
  access_log, lines_path, totals_path = paths.access_log, paths.lines, paths.totals
end

-- One request's keys, added into `add` (the shared dictionary or a worker's table).
local function lost(what, n)
  meta:incr(what, n or 1, 0)
end

local function shared_incr(key, n)
  local _, err, forcible = counted:incr(key, n, 0)
  if err then
    lost("dict_full", n)          -- "no memory": nothing could be evicted to make room
  elseif forcible then
    lost("dict_evictions")        -- room was made by evicting other keys: their counts are gone
  end
end

function M.count_shared()
  local var = ngx.var
  shared_incr("status:" .. var.status, 1)
  shared_incr("path:" .. var.uri, 1)
  shared_incr("client:" .. var.remote_addr, 1)
end

-- mode local: a worker's own table, no lock; the timer moves it to the shared dictionary.
local pending = {}

function M.count_local()
  local var = ngx.var
  local k1, k2, k3 = "status:" .. var.status, "path:" .. var.uri, "client:" .. var.remote_addr
  pending[k1] = (pending[k1] or 0) + 1
  pending[k2] = (pending[k2] or 0) + 1
  pending[k3] = (pending[k3] or 0) + 1
end

local function flush()
  local batch = pending
  pending = {}
  for key, n in pairs(batch) do
    shared_incr(key, n)
  end
end

-- mode ship: a non-blocking unix datagram socket per worker, written with send(2) through the FFI (cosockets
-- are not allowed in the log phase). A full receive queue refuses the datagram: counted as dropped.
local ffi, C, fd
local function open_socket(path)
  -- sun_path holds 107 bytes and a NUL: a longer path would be copied past its end
  if #path > 107 then return nil, "socket path longer than 107 bytes: " .. path end
  ffi = require("ffi")
  ffi.cdef [[
    struct bb_sockaddr_un { unsigned short sun_family; char sun_path[108]; };
    int socket(int domain, int type, int protocol);
    int connect(int fd, const void *addr, unsigned int len);
    long send(int fd, const void *buf, size_t len, int flags);
  ]]
  C = ffi.C
  local AF_UNIX, SOCK_DGRAM, SOCK_NONBLOCK, SOCK_CLOEXEC = 1, 2, 2048, 524288
  local s = C.socket(AF_UNIX, SOCK_DGRAM + SOCK_NONBLOCK + SOCK_CLOEXEC, 0)
  if s < 0 then return nil, "socket() failed: errno " .. ffi.errno() end
  local addr = ffi.new("struct bb_sockaddr_un")
  addr.sun_family = AF_UNIX
  ffi.copy(addr.sun_path, path)
  if C.connect(s, addr, ffi.sizeof(addr)) ~= 0 then return nil, "connect(" .. path .. ") failed: errno " .. ffi.errno() end
  return s
end

function M.ship()
  local var = ngx.var
  local line = var.status .. " " .. var.uri .. " " .. var.remote_addr
  if fd == nil or C.send(fd, line, #line, 0) < 0 then
    lost("dropped")
  end
end

function M.init_worker()
  if mode == "local" then
    local ok, err = ngx.timer.every(FLUSH_S, flush)
    if not ok then ngx.log(ngx.ERR, "logagg: no flush timer: ", err) end
  elseif mode == "ship" then
    local err
    fd, err = open_socket(lines_path)
    if not fd then ngx.log(ngx.ERR, "logagg: ", err) end
  end
end

-- /__bench?batches=B&size=S: the mode's own log-phase function in a tight loop inside a worker, B batches of
-- S calls each, timed batch by batch with CLOCK_MONOTONIC; between batches the worker yields for 2 ms, so the
-- collector can drain its socket (ship) and timers run (local). ngx.var here is the bench request's own
-- (status, uri, address): the same reads as in the log phase. Answers {"calls": n, "ns": total}.
local clock
local function monotonic_ns()
  if not clock then
    local ffi_ = require("ffi")
    ffi_.cdef [[
      struct bb_timespec { long tv_sec; long tv_nsec; };
      int clock_gettime(int clk, struct bb_timespec *tp);
    ]]
    clock = {ffi = ffi_, ts = ffi_.new("struct bb_timespec")}
  end
  clock.ffi.C.clock_gettime(1, clock.ts) -- CLOCK_MONOTONIC
  return tonumber(clock.ts.tv_sec) * 1e9 + tonumber(clock.ts.tv_nsec)
end

local nothing = function() end

function M.bench()
  local batches, size = tonumber(ngx.var.arg_batches) or 50, tonumber(ngx.var.arg_size) or 200
  local f = ({shared = M.count_shared, ["local"] = M.count_local, ship = M.ship})[mode] or nothing
  local total = 0
  for _ = 1, batches do
    local t0 = monotonic_ns()
    for _ = 1, size do f() end
    total = total + (monotonic_ns() - t0)
    ngx.sleep(0.002)
  end
  ngx.header["Content-Type"] = "application/json"
  ngx.say(string.format('{"calls": %d, "ns": %.0f}', batches * size, total))
end

-- /__totals ---------------------------------------------------------------------------------------------
local function add(groups, group, key, n)
  groups[group] = groups[group] or {}
  groups[group][key] = (groups[group][key] or 0) + n
end

local function from_dictionary(groups)
  for _, key in ipairs(counted:get_keys(0)) do
    local group, name = key:match("^(%a+):(.*)$")
    local n = counted:get(key)
    if group and n then add(groups, group, name, n) end
  end
end

local function from_access_log(groups)
  local file = io.open(access_log, "r")
  if not file then return end
  for line in file:lines() do
    local status, path, client = line:match("^(%S+) (%S+) (%S+)$")
    if status then
      add(groups, "status", status, 1)
      add(groups, "path", path, 1)
      add(groups, "client", client, 1)
    else
      add(groups, "_lost", "bad_lines", 1)
    end
  end
  file:close()
end

local function from_collector(groups)
  local sock = ngx.socket.tcp()
  sock:settimeout(2000)
  local ok, err = sock:connect("unix:" .. totals_path)
  if not ok then return "collector: " .. err end
  local body = sock:receive("*a")
  sock:close()
  local got = require("cjson.safe").decode(body or "")
  if type(got) ~= "table" then return "collector: not JSON" end
  for _, group in ipairs({"status", "path", "client"}) do
    for key, n in pairs(got[group] or {}) do add(groups, group, key, n) end
  end
  if (got.bad or 0) > 0 then add(groups, "_lost", "bad_lines", got.bad) end
end

function M.totals()
  local groups = {_lost = {}}
  local err
  if mode == "shared" or mode == "local" then
    if mode == "local" then flush() end -- this worker's; the others' timers flush theirs within FLUSH_S
    from_dictionary(groups)
  elseif mode == "file" then
    from_access_log(groups)
  elseif mode == "ship" then
    err = from_collector(groups)
  end
  for _, key in ipairs(meta:get_keys(0)) do add(groups, "_lost", key, meta:get(key)) end
  local lost_counts = groups._lost
  groups._lost = nil
  local cjson = require("cjson")
  ngx.header["Content-Type"] = "application/json"
  if err then
    ngx.status = 500
    ngx.say(cjson.encode({error = err}))
    return
  end
  -- lost: what the server itself knows it lost (dictionary full or evicting, datagrams refused, bad lines)
  ngx.say(cjson.encode({counts = mode ~= "none" and groups or cjson.null, lost = lost_counts}))
end

return M
