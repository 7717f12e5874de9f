-- LuaJIT's FFI calling the plugin contract in a Go c-shared library (go/cshared): the mechanism a host
-- written in LuaJIT (OpenResty, say) would use to reach Go code. One run() makes CALLS calls, so the
-- probe reports per call. LuaJIT only: the FFI is LuaJIT's.
local ffi = require("ffi")
ffi.cdef[[
long long ContractInt(long long x);
void ContractBytes(const char *in, int n, char *out);
]]
local library = os.getenv("CALL_CSHARED")
if not library then error("CALL_CSHARED is not set (the library built from go/cshared)") end
local lib = ffi.load(library)

local CALLS = 10000
local INT_ARG = 12345
local SIZES = { ["0"] = 0, ["64"] = 64, ["1k"] = 1024, ["16k"] = 16384 }

-- The contract's payloads (contract.Payload), and an output buffer each, made once at load.
local payloads, outputs = {}, {}
for name, n in pairs(SIZES) do
  local p = ffi.new("char[?]", n + 1)
  for i = 0, n - 1 do p[i] = (i * 31 + 7) % 256 end
  payloads[name], outputs[name] = p, ffi.new("char[?]", n + 1)
end

local function hex8(buf, n)
  local bytes, parts = ffi.cast("const uint8_t *", buf), {}
  for i = 0, math.min(8, n) - 1 do parts[#parts + 1] = string.format("%02x", bytes[i]) end
  return table.concat(parts)
end

local function run(param)
  if param == "int" then
    local r
    for _ = 1, CALLS do r = lib.ContractInt(INT_ARG) end
    return string.format("%d", tonumber(r))
  end
  local size = param:match("^bytes/(.+)$")
  local n = size and SIZES[size]
  if not n then error("unknown parameter " .. tostring(param)) end
  local p, out = payloads[size], outputs[size]
  for _ = 1, CALLS do lib.ContractBytes(p, n, out) end
  return string.format("%d:%s", n, hex8(out, n))
end

return { batch = CALLS, run = run }
