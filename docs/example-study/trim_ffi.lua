-- The same benchmark through LuaJIT's FFI: a C function trims, Lua counts. Set-up (loading the library,
-- building the inputs) happens here, at load time, outside the timed loop.
local ffi = require("ffi")
ffi.cdef("size_t trimmed_length(const char *s, size_t n);")
local lib = ffi.load(assert(os.getenv("TRIM_LIB"), "TRIM_LIB is not set"))

local inputs = {}
for i = 1, 1000 do
  inputs[i] = string.rep(" ", i % 7) .. "item " .. i .. string.rep("\t", i % 5)
end

return {
  run = function(n)
    local total = 0
    for i = 1, n do total = total + tonumber(lib.trimmed_length(inputs[i], #inputs[i])) end
    return tostring(total)
  end,
}
