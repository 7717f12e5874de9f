-- The bridgebench Lua probe: one process execution of one benchmark.
-- Usage: <lua> probe.lua BENCHMARK_FILE ITERATIONS PARAM
-- The benchmark file returns a table with run(param) -> answer string, and optionally batch: how many
-- calls of the measured operation one run() makes (figures are then reported per call). Nothing is
-- printed inside the timed loop; one JSON object (protocol bridgebench/1) is printed on stdout after it.
-- Stepped mode (BRIDGEBENCH_STEPPED=1, bridgebench/lockstep.py): after loading the benchmark the probe
-- says "bridgebench-stepped/1 ready" and then runs each iteration only when the harness sends "g" on
-- stdin, answering with that iteration's seconds on a line of its own; the JSON object still comes last.
-- BRIDGEBENCH_HEAP_PAD=N: N bytes allocated before the benchmark loads, so that where its code and data
-- land in memory is drawn per process execution (the harness draws N) instead of fixed by the paths.
local clock = require("bbclock")

local bench_file, iterations, param = arg[1], tonumber(arg[2]), arg[3]
if not bench_file or not iterations or iterations < 1 or iterations % 1 ~= 0 then
  io.stderr:write("usage: probe.lua BENCHMARK_FILE ITERATIONS [PARAM]\n")
  os.exit(2)
end
param = tonumber(param) or param

local stepped = os.getenv("BRIDGEBENCH_STEPPED") == "1"
local heap_pad = string.rep("\0", tonumber(os.getenv("BRIDGEBENCH_HEAP_PAD") or "0") or 0)  -- kept alive

-- Loading the benchmark is its start-up (an FFI library opened, tables built): timed, reported apart.
local setup_t0 = clock.now()
local bench = dofile(bench_file)
local setup_s = clock.now() - setup_t0
if type(bench) ~= "table" or type(bench.run) ~= "function" then
  io.stderr:write("probe: " .. bench_file .. " must return a table with a run(param) function\n")
  os.exit(2)
end
local run = bench.run
local batch = bench.batch or 1
if type(batch) ~= "number" or batch < 1 or batch % 1 ~= 0 then
  io.stderr:write("probe: " .. bench_file .. ": batch must be a positive integer\n")
  os.exit(2)
end

-- Planted work (BRIDGEBENCH_EXTRA_SHARE=S, a fraction): each call also runs the benchmark at S of its
-- size, inside the timed region, and keeps the first answer, so a twin of a VM does more real work of the
-- same kind and still answers as the VM does. How much more it is, is counted, not assumed (the size is
-- rarely all of the work). Wrapped here so that the VM without it runs the very same loop.
local extra_share = os.getenv("BRIDGEBENCH_EXTRA_SHARE")
if extra_share then
  local share = tonumber(extra_share)
  if type(param) ~= "number" or not share or share <= 0 or share >= 1 then
    io.stderr:write("probe: BRIDGEBENCH_EXTRA_SHARE needs a share between 0 and 1 and a numeric size, got "
                    .. tostring(extra_share) .. " and " .. tostring(param) .. "\n")
    os.exit(2)
  end
  local plain = run
  run = function(size)
    local answer = plain(size)
    plain(math.max(1, math.floor(size * share + 0.5)))
    return answer
  end
end

-- Pre-allocate so the loop does not grow tables while timing.
local times, heap_kb, cpu_s = {}, {}, {}
for i = 1, iterations do times[i] = 0; heap_kb[i] = 0; cpu_s[i] = 0 end

local now, cpu = clock.now, clock.cpu

-- JIT diagnostics (LuaJIT with its JIT on; nothing on PUC Lua): what the trace compiler did in each
-- iteration. A handler attached to the compiler's trace events only adds to preallocated per-iteration
-- counters and notes where each trace started; names, machine-code size and the signature are worked out
-- after the timed loop. The handler changes the work it watches (deltablue's by 29 %, luajit-consistency's
-- figure), so it is on only when asked for (BRIDGEBENCH_JIT_DIAG=1: the studies about the JIT's decisions).
local diag = nil
if type(jit) == "table" and jit.status() and os.getenv("BRIDGEBENCH_JIT_DIAG") == "1" then
  local ok_util, util = pcall(require, "jit.util")  -- built in; jit.vmdef (names) is a file, read after
  if ok_util then
    diag = {util = util, at = 0, highest = 0, traces = {}, aborts = {}, flushes = 0,
            start_func = {}, start_pc = {}, side = {}, done_func = {}, done_pc = {}, done_side = {},
            reason = {}, reason_detail = {}}
    for i = 0, iterations do diag.traces[i] = 0; diag.aborts[i] = 0 end
    diag.handler = function(what, tr, func, pc, otr, oex)
      local at = diag.at
      if what == "start" then
        diag.start_func[tr], diag.start_pc[tr], diag.side[tr] = func, pc, otr ~= nil and otr ~= 0
        if tr > diag.highest then diag.highest = tr end
      elseif what == "stop" then
        diag.traces[at] = diag.traces[at] + 1
        local n = #diag.done_func + 1
        diag.done_func[n], diag.done_pc[n], diag.done_side[n] = diag.start_func[tr], diag.start_pc[tr], diag.side[tr]
      elseif what == "abort" then
        diag.aborts[at] = diag.aborts[at] + 1
        local n = #diag.reason + 1
        diag.reason[n], diag.reason_detail[n] = otr, oex
      elseif what == "flush" then
        diag.flushes = diag.flushes + 1
      end
    end
    jit.attach(diag.handler, "trace")
  end
end

-- Under callgrind each iteration is bracketed (zeroed before, dumped after: one dump an iteration); a
-- bbclock built without valgrind's header has no brackets, and the harness then finds no dumps.
local nothing = function() end
local count_start, count_stop = clock.count_start or nothing, clock.count_stop or nothing
local first_answer = nil
local stdin, stdout = io.stdin, io.stdout
local EINTR = 4  -- Linux's errno: a read cut short by a signal, not the end of input
local function step()  -- wait for the harness's turn; anything but "g" ends the process
  local go, err, code = stdin:read(1)
  -- A library's timer signal (GT.M's flush timer, a second after a database write) interrupts the wait:
  -- wait again, as the harness has not closed anything.
  while go == nil and code == EINTR do go, err, code = stdin:read(1) end
  if go ~= "g" then
    io.stderr:write("probe: stepped mode: expected \"g\" on stdin, got "
                    .. (go and string.format("%q", go) or err or "end of input") .. "\n")
    os.exit(2)
  end
end
if stepped then
  stdout:write("bridgebench-stepped/1 ready\n")
  stdout:flush()
end
for i = 1, iterations do
  if stepped then step() end
  if diag then diag.at = i end
  local c0 = cpu()  -- the CPU clock is read outside the timed region
  count_start()
  local t0 = now()
  local answer = run(param)
  local t1 = now()
  count_stop()
  cpu_s[i] = cpu() - c0
  times[i] = t1 - t0
  heap_kb[i] = collectgarbage("count")
  if stepped then
    stdout:write(string.format("%.17g\n", times[i]))
    stdout:flush()
  end
  -- Every iteration must compute the same answer; compared outside the timed region.
  if i == 1 then
    first_answer = answer
  elseif answer ~= first_answer then
    io.stderr:write("probe: iteration " .. i .. " answered differently from iteration 1\n")
    os.exit(3)
  end
end

if diag then jit.attach(diag.handler) end  -- detached: what follows is not the benchmark's

if type(first_answer) ~= "string" then
  io.stderr:write("probe: run() must return a string answer, got " .. type(first_answer) .. "\n")
  os.exit(3)
end

local function json_string(s)
  s = s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return string.format("\\u%04x", c:byte())
  end)
  return '"' .. s .. '"'
end

local function json_numbers(xs)
  local out = {}
  for i = 1, #xs do out[i] = string.format("%.17g", xs[i]) end
  return "[" .. table.concat(out, ",") .. "]"
end

-- The JIT's record of this execution: counts, abort reasons in words, the machine code of the traces alive
-- at the end, and a signature of where its traces started (executions whose compiler made the same traces
-- share it: a djb2 hash of the sorted start places, so that the harness can group them).
local function jit_record()
  local util = diag.util
  -- The names of errors, bytecodes and built-ins, where LuaJIT's jit/ folder is on LUA_PATH; else numbers.
  local ok_vmdef, vmdef = pcall(require, "jit.vmdef")
  if not ok_vmdef then vmdef = {traceerr = {}, ffnames = {}} end
  local function place(func, pc)
    local fi = util.funcinfo(func, pc)
    if fi.loc then return (fi.loc:gsub("^.*/", "")) end
    if fi.ffid then return vmdef.ffnames[fi.ffid] or "builtin" end
    return "C function"
  end
  local starts = {}
  for n = 1, #diag.done_func do
    starts[n] = (diag.done_side[n] and "side " or "root ") .. place(diag.done_func[n], diag.done_pc[n])
  end
  table.sort(starts)
  local h = 5381
  for n = 1, #starts do
    local line = starts[n] .. "\n"
    for k = 1, #line do h = (h * 33 + line:byte(k)) % 4294967296 end
  end
  local reasons, kinds = {}, {}
  for n = 1, #diag.reason do
    local code, detail = diag.reason[n], diag.reason_detail[n]
    local text = vmdef.traceerr[code] or ("trace error " .. tostring(code))
    if text:find("bytecode %d", 1, true) and type(detail) == "number" and vmdef.bcnames then
      text = text:gsub("%%d", (vmdef.bcnames:sub(detail * 6 + 1, detail * 6 + 6):gsub(" +$", "")))
    elseif text:find("%", 1, true) then
      local shown = type(detail) == "function" and place(detail) or tostring(detail)
      text = text:gsub("%%[sd]", (shown:gsub("%%", "%%%%")))
    end
    if not reasons[text] then kinds[#kinds + 1] = text; reasons[text] = 0 end
    reasons[text] = reasons[text] + 1
  end
  table.sort(kinds)
  local parts = {}
  for n = 1, #kinds do parts[n] = json_string(kinds[n]) .. ":" .. reasons[kinds[n]] end
  local mcode, total, aborted = 0, 0, 0
  for tr = 1, diag.highest do
    local code = util.tracemc(tr)
    if code then mcode = mcode + #code end
  end
  for i = 0, iterations do total = total + diag.traces[i]; aborted = aborted + diag.aborts[i] end
  return string.format('{"traces":%d,"aborts":%d,"flushes":%d,"mcode_bytes":%d,"signature":"%08x",' ..
    '"abort_reasons":{%s}}', total, aborted, diag.flushes, mcode, h, table.concat(parts, ","))
end

local vm = _VERSION
if type(jit) == "table" then
  vm = jit.version .. (jit.status() and " (JIT on)" or " (JIT off)")
end

io.stdout:write('{"protocol":"bridgebench/1"',
  ',"vm":', json_string(vm),
  ',"clock":', json_string(clock.name),
  ',"clock_resolution_s":', string.format("%.17g", clock.resolution()),
  ',"batch":', string.format("%d", batch),
  ',"setup_s":', string.format("%.17g", setup_s),
  ',"heap_pad":', string.format("%d", #heap_pad),
  ',"answer":', json_string(first_answer),
  ',"times":', json_numbers(times),
  diag and (',"jit":' .. jit_record()) or "",
  ',"counters":{"heap_kb":', json_numbers(heap_kb), ',"cpu_s":', json_numbers(cpu_s),
  diag and (',"jit_traces":' .. json_numbers({(unpack or table.unpack)(diag.traces, 1, iterations)}) ..
            ',"jit_aborts":' .. json_numbers({(unpack or table.unpack)(diag.aborts, 1, iterations)})) or "",
  '}}\n')
