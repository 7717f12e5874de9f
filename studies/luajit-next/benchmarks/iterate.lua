-- Iterating over a table's keys and values in LuaJIT, as in the Cloudflare post "LuaJIT Hacking: getting
-- next() out of the NYI list" (seed: ../shared/seeds/cloudflare-luajit-posts.txt): loops over a table of
-- 10,000 entries adding up its values. PARAM is FORM/KEYS/LOOPS:
--   FORM  next      a while loop that calls next(t, k) itself (what the post taught the compiler)
--         pairs     for k, v in pairs(t) (the interpreter's specialised ISNEXT/ITERN bytecodes)
--         pairs-ffi the same with a uint64_t accumulator (0ULL): an FFI value in the loop
--         ipairs    for i, v in ipairs(t) (a sequence only)
--   KEYS  seq       the integers 1..10000 (the array part)
--         hash      10,000 string keys (the hash part)
--         mixed     5,000 integers and 5,000 strings
--   LOOPS how many times the whole table is walked in one iteration
local SIZE = 10000

local function table_of(keys)
  local t = {}
  if keys == "seq" then
    for i = 1, SIZE do t[i] = i end
  elseif keys == "hash" then
    for i = 1, SIZE do t["k" .. i] = i end
  else  -- mixed
    for i = 1, SIZE / 2 do t[i] = i; t["k" .. i] = i end
  end
  return t
end

local forms = {}

function forms.next(t, loops)
  local s = 0
  for _ = 1, loops do
    local k, v = next(t)
    while k ~= nil do
      s = s + v
      k, v = next(t, k)
    end
  end
  return s
end

function forms.pairs(t, loops)
  local s = 0
  for _ = 1, loops do
    for _, v in pairs(t) do s = s + v end
  end
  return s
end

forms["pairs-ffi"] = function(t, loops)
  local s = 0ULL
  for _ = 1, loops do
    for _, v in pairs(t) do s = s + v end
  end
  return s
end

function forms.ipairs(t, loops)
  local s = 0
  for _ = 1, loops do
    for _, v in ipairs(t) do s = s + v end
  end
  return s
end

-- Built when the benchmark loads (the probe's start-up), so that each iteration only walks.
local tables = {seq = table_of("seq"), hash = table_of("hash"), mixed = table_of("mixed")}

return {
  run = function(param)
    local form, keys, loops = tostring(param):match("^([%w-]+)/(%a+)/(%d+)$")
    local walk = forms[form or ""]
    if not walk then
      error("iterate: PARAM must be FORM/KEYS/LOOPS with FORM next, pairs, pairs-ffi or ipairs, got "
            .. tostring(param))
    end
    local t = tables[keys or ""]
    if not t then
      error("iterate: KEYS must be seq, hash or mixed, got " .. tostring(keys))
    end
    local s = walk(t, tonumber(loops))
    return type(s) == "number" and string.format("%.0f", s) or tostring(s)
  end,
}
