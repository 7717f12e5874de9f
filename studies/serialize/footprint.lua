-- What one codec's messages weigh: bytes per message, and the Lua heap that encoding and decoding a
-- message allocate once warm (all N done once first, so a JIT has compiled the loops, and their results
-- collected, so that equal strings are not found interned; then the garbage collector stopped around N more). On LuaJIT, FFI values the compiler could not sink count; a C++
-- library's own allocations do not. Writes the N messages one after another to OUT (JSON and MessagePack
-- a line each, as a log shipper writes them; Cap'n Proto framed) and prints one JSON object.
-- Usage: <lua> footprint.lua CODEC MESSAGE N OUT       (studies/serialize/evidence/serialize_sizes.py runs it)
local source = debug.getinfo(1, "S").source:sub(2)
package.path = (source:match("^(.*)/[^/]*$") or ".") .. "/lua/?.lua;" .. package.path
local records = require("records")
local codecs = require("codecs")

local name, message, n, out_path = arg[1], arg[2], tonumber(arg[3]), arg[4]
if not (name and message and n and out_path) then
  io.stderr:write("usage: footprint.lua CODEC MESSAGE N OUT\n")
  os.exit(2)
end
local codec = codecs.open(name, message)
local originals = records[message](n)
local encoded, decoded = {}, {}
for i = 1, n do encoded[i], decoded[i] = false, false end  -- slots made before the heap is read

local function allocated(work)
  work({})
  collectgarbage("collect")
  collectgarbage("stop")
  local before = collectgarbage("count")
  work(nil)
  local after = collectgarbage("count")
  collectgarbage("restart")
  return (after - before) * 1024 / n
end

-- work(scratch) stores its results in scratch (the warm-up, dropped after) or, given nil, where they are kept.
local encode_bytes = allocated(function(scratch)
  local into = scratch or encoded
  for i = 1, n do into[i] = codec.encode(originals[i]) end
end)
local decode_bytes = allocated(function(scratch)
  local into = scratch or decoded
  for i = 1, n do into[i] = codec.decode(encoded[i]) end
end)
local total = 0
local file = assert(io.open(out_path, "wb"))
local separator = name:match("^capnp") and "" or "\n"
for i = 1, n do
  total = total + #encoded[i]
  file:write(encoded[i], separator)
end
file:close()
if records.canonical(decoded) ~= records.canonical(originals) then
  io.stderr:write(name .. ": the decoded messages differ from the originals\n")
  os.exit(3)
end
print(string.format('{"messages": %d, "bytes": %d, "encode_heap_bytes": %.1f, "decode_heap_bytes": %.1f}',
                    n, total, encode_bytes, decode_bytes))
