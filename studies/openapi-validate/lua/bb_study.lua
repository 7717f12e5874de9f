-- What the study's Lua scripts share (nginx's handler, the tight loop, the agreement runner): reading a
-- file, and opening the study's Go library (go/main.go, c-shared) through LuaJIT's FFI.

local M = {}

function M.read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

local declared = false

-- The Go library, initialised with the spec: returns the library and the ffi module; raises with Go's
-- reason if bb_init fails. Call it after fork in nginx (init_worker_by_lua), never in the master.
function M.go(lib_path, spec_path)
  local ffi = require("ffi")
  if not declared then
    ffi.cdef([[
    int bb_init(const char *spec_path);
    int bb_validate_body(const char *body, int len);
    int bb_validate_request(const char *method, const char *path, const char *query, const char *headers_json,
                            const char *body, int len);
    const char *bb_error(void);
    ]])
    declared = true
  end
  local lib = ffi.load(lib_path)
  if lib.bb_init(spec_path) ~= 0 then error("bb_init: " .. ffi.string(lib.bb_error()), 0) end
  return lib, ffi
end

return M
