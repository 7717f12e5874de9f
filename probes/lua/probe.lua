-- The bridgebench Lua probe: one process execution of one benchmark.
-- Usage: <lua> probe.lua BENCHMARK_FILE ITERATIONS PARAM
-- The benchmark file returns a table with run(param) -> answer string, and optionally batch: how many
-- calls of the measured operation one run() makes (figures are then reported per call). Nothing is
-- printed inside the timed loop; one JSON object (protocol bridgebench/1) is printed on stdout after it.
local clock = require("bbclock")

local bench_file, iterations, param = arg[1], tonumber(arg[2]), arg[3]
if not bench_file or not iterations or iterations < 1 or iterations % 1 ~= 0 then
  io.stderr:write("usage: probe.lua BENCHMARK_FILE ITERATIONS [PARAM]\n")
  os.exit(2)
end
param = tonumber(param) or param

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

-- Pre-allocate so the loop does not grow tables while timing.
local times, heap_kb, cpu_s = {}, {}, {}
for i = 1, iterations do times[i] = 0; heap_kb[i] = 0; cpu_s[i] = 0 end

local now, cpu = clock.now, clock.cpu
-- Under callgrind each iteration is bracketed (zeroed before, dumped after: one dump an iteration); a
-- bbclock built without valgrind's header has no brackets, and the harness then finds no dumps.
local nothing = function() end
local count_start, count_stop = clock.count_start or nothing, clock.count_stop or nothing
local first_answer = nil
for i = 1, iterations do
  local c0 = cpu()  -- the CPU clock is read outside the timed region
  count_start()
  local t0 = now()
  local answer = run(param)
  local t1 = now()
  count_stop()
  cpu_s[i] = cpu() - c0
  times[i] = t1 - t0
  heap_kb[i] = collectgarbage("count")
  -- Every iteration must compute the same answer; compared outside the timed region.
  if i == 1 then
    first_answer = answer
  elseif answer ~= first_answer then
    io.stderr:write("probe: iteration " .. i .. " answered differently from iteration 1\n")
    os.exit(3)
  end
end

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
  ',"answer":', json_string(first_answer),
  ',"times":', json_numbers(times),
  ',"counters":{"heap_kb":', json_numbers(heap_kb), ',"cpu_s":', json_numbers(cpu_s), '}}\n')
