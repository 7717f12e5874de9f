-- One codec ($SERIALIZE_CODEC, lua/codecs.lua) on one kind of message. PARAM is OPERATION/MESSAGE/N:
--   OPERATION  encode   N tables to N strings an iteration
--              decode   N strings (encoded by the same codec at start-up) to N tables an iteration
--   MESSAGE    log (an HttpLog) or addressbook (an AddressBook: lua/records.lua makes both)
--   N          messages an iteration; figures are per message (the probe's batch)
-- At start-up, outside the timed loop, every message is encoded and decoded once and must come back equal
-- to the original; a Cap'n Proto codec's messages must also be read back equal by the other Cap'n Proto
-- implementation, both ways, when both are here ($SERIALIZE_CAPNP_LIB). Any difference stops the execution.
-- The answer is a hash of the messages' content, and for decode a sum over what this iteration decoded:
-- the same from every codec.
local source = debug.getinfo(1, "S").source:sub(2)
local study = source:match("^(.*)/benchmarks/[^/]*$") or ".."
package.path = study .. "/lua/?.lua;" .. package.path

local records = require("records")
local codecs = require("codecs")

local param = arg and arg[3]  -- the probe's PARAM (probe.lua BENCHMARK_FILE ITERATIONS PARAM)
local operation, message, n = tostring(param):match("^(%a+)/(%a+)/(%d+)$")
n = tonumber(n)
if not (operation == "encode" or operation == "decode") or not n or n < 1 then
  error("codec.lua: PARAM must be encode|decode/log|addressbook/N, got " .. tostring(param), 0)
end
local name = os.getenv("SERIALIZE_CODEC")
if not name then error("codec.lua: SERIALIZE_CODEC is not set", 0) end

local codec = codecs.open(name, message)
local originals = records[message](n)
local digest = records.hash(records.canonical(originals))

local function same(a, b)
  return records.canonical(a) == records.canonical(b)
end

local encoded = {}
for i = 1, n do
  encoded[i] = codec.encode(originals[i])
  if not same(codec.decode(encoded[i]), originals[i]) then
    error(name .. ": message " .. i .. " does not come back equal from encode and decode", 0)
  end
end

-- Cap'n Proto: the study's generated Lua and libcapnp must read each other's messages.
local other = ({["capnp-lua"] = "capnp-cxx", ["capnp-cxx"] = "capnp-lua"})[name]
if other and os.getenv("SERIALIZE_CAPNP_LIB") then
  local them = codecs.open(other, message)
  for i = 1, n do
    if not same(them.decode(encoded[i]), originals[i]) then
      error(name .. ": message " .. i .. " is read differently by " .. other, 0)
    end
    if not same(codec.decode(them.encode(originals[i])), originals[i]) then
      error(name .. ": message " .. i .. " of " .. other .. " is read differently", 0)
    end
  end
end

local encode, decode = codec.encode, codec.decode
local out = {}
local run
if operation == "encode" then
  local answer = digest .. "/" .. n
  run = function()
    for i = 1, n do out[i] = encode(originals[i]) end
    return answer
  end
else
  -- A field or two of every decoded message, summed: proof that this iteration decoded them.
  local touch = message == "log"
    and function(t) return t.status + #t.uri end
    or function(t) return #t.people + t.people[1].id end
  run = function()
    local sum = 0
    for i = 1, n do sum = sum + touch(decode(encoded[i])) end
    return digest .. "/" .. string.format("%.0f", sum)
  end
end

return {run = run, batch = n}
