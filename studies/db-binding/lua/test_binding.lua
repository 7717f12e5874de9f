-- The binding module's own tests (tests/test_db_binding.py runs them under Lua 5.4 and LuaJIT on a throw-away
-- database holding ^T as tests/test_db_binding.py fills it): the naive, cached and batched styles give the
-- same sequences, values and writes, and v1 and v2 node objects the same references. Prints "ok N".
local binding = require("binding")
local node_v1, node_v2 = require("node_v1"), require("bbgtm").node
local checks = 0

local function show(t)
  local out = {}
  for i = 1, #t do out[i] = string.format("%q", tostring(t[i])) end
  return "{" .. table.concat(out, ", ") .. "}"
end

local function same(got, want, what)
  checks = checks + 1
  if type(want) == "table" then
    if #got ~= #want then error(what .. ": " .. show(got) .. " ~= " .. show(want), 2) end
    for i = 1, #want do
      if got[i] ~= want[i] then error(what .. ": " .. show(got) .. " ~= " .. show(want), 2) end
    end
  elseif got ~= want then
    error(what .. ": " .. tostring(got) .. " ~= " .. tostring(want), 2)
  end
end

local styles = { "naive", "cached", "batched" }

local function sequence(style, s1, limit)
  local subs, values = {}, {}
  local o = binding[style]("^T", s1)
  local n = o.each(limit or 1e9, function(x) subs[#subs + 1] = x end)
  same(n, #subs, style .. " each count")
  o.get_each(limit or 1e9, function(x, v) values[#values + 1] = x .. "=" .. v end)
  return subs, values
end

-- M's collation: numbers first in numeric order, then strings byte by byte
local mixed = { "-3", "1", "1.5", "2", "10", "01", "a", "a,b", 'q"uote', 'x,y"z' }
local expected = {
  empty = {},
  one = { "7" },
  mixed = mixed,
  ['s1,"q'] = { "1", "2" },
}
local many = {}
for i = 1, 2500 do many[i] = tostring(i) end  -- crosses the batched style's batches (256 nodes)
expected.many = many

for s1, want in pairs(expected) do
  local base_subs, base_values = sequence("naive", s1)
  same(base_subs, want, "naive order of " .. s1)
  for _, style in ipairs(styles) do
    local subs, values = sequence(style, s1)
    same(subs, want, style .. " subscripts of " .. s1)
    same(values, base_values, style .. " values of " .. s1)
    for i, x in ipairs(want) do
      same(binding[style]("^T", s1).get(x), base_values[i]:sub(#x + 2), style .. " get " .. s1 .. " " .. x)
    end
  end
end

-- A limit stops every style at the same node.
for _, style in ipairs(styles) do
  same(sequence(style, "many", 1001), { (table.unpack or unpack)(many, 1, 1001) },
       style .. " limit")
end

-- Writes: every style writes the same nodes, read back through the naive style.
local writes = { "1", "v1", "-3", "minus", "1.5", "", "01", 'q"uote', "a,b", "c,d", 'x,y"z', '"' }
for _, style in ipairs(styles) do
  local o = binding[style]("^T", "w-" .. style)
  o.set(writes[1], writes[2])
  o.set_pairs({ (table.unpack or unpack)(writes, 3) }, math.floor((#writes - 2) / 2))
  local subs, values = sequence("naive", "w-" .. style)
  same(subs, { "-3", "1", "1.5", "01", "a,b", 'x,y"z' }, style .. " wrote")
  same(values, { "-3=minus", "1=v1", "1.5=", '01=q"uote', "a,b=c,d", 'x,y"z="' }, style .. " wrote values")
end

-- Node objects: v1's Lua tables and v2's userdata give the same references.
local cases = {
  { { "demographics" }, { "country", "person", 3, "gender" }, 'demographics("country","person","3","gender")' },
  { { "^x" }, { 'a"b', "c,d" }, '^x("a""b","c,d")' },
  { { "root", "a", 2 }, { "b" }, 'root("a","2","b")' },
  { { "root" }, {}, "root" },
}
for _, case in ipairs(cases) do
  for name, make in pairs({ v1 = node_v1, v2 = node_v2 }) do
    local node = make((table.unpack or unpack)(case[1]))
    for _, key in ipairs(case[2]) do node = node[key] end
    same(node:ref(), case[3], name .. " ref")
    same(tostring(node), case[3], name .. " tostring")
    same(node:depth(), #case[1] - 1 + #case[2], name .. " depth")
    local subs = case[2]
    same(node:name(), subs[#subs] and tostring(subs[#subs]) or (#case[1] > 1 and tostring(case[1][#case[1]])
         or case[1][1]), name .. " name")
  end
end
for name, make in pairs({ v1 = node_v1, v2 = node_v2 }) do
  local ok = pcall(function() return make("x")[{}] end)
  same(ok, false, name .. " refuses a table subscript")
end

print("ok " .. checks)
