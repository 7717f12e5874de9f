-- The Lua mechanisms' benchmark file (bridgebench's Lua probe runs it): PARAM is "OPERATION N".
--   traverse     count the first N nodes of ^BCAT("lvd",*) and sum their subscripts
--   get          sum the values of ^BCAT("lvd",1..N) (batched: of the first N nodes, a batch at a time)
--   set          empty ^BBSET, set ^BBSET("lvd",i)=i for i=1..N, answer with what M then counts in it
--   node-create  make N node objects node("demographics").country.person[i].gender (client side only)
-- in the binding style BB_STYLE names: naive, cached or batched (for node-create, naive is v1's Lua tables
-- and cached v2's userdata). Runs unchanged on Lua 5.4 and LuaJIT.
local style = os.getenv("BB_STYLE")
local binding = require("binding")
if not binding[style] then error("BB_STYLE must be naive, cached or batched, not " .. tostring(style)) end
local make_node = style == "naive" and require("node_v1") or require("bbgtm").node

local operations = {}

function operations.traverse(n)
  local sum = 0
  local count = binding[style]("^BCAT", "lvd").each(n, function(x) sum = sum + tonumber(x) end)
  return string.format("%d %.0f", count, sum)
end

function operations.get(n)
  local bcat, sum = binding[style]("^BCAT", "lvd"), 0
  if style == "batched" then
    local count = bcat.get_each(n, function(_, v) sum = sum + tonumber(v) end)
    return string.format("%d %.0f", count, sum)
  end
  local get = bcat.get
  for i = 1, n do sum = sum + tonumber(get(i)) end
  return string.format("%d %.0f", n, sum)
end

function operations.set(n)
  local bbset = binding[style]("^BBSET", "lvd")
  binding.clear()
  if style == "batched" then
    local t, k = {}, 0
    for i = 1, n do
      k = k + 1
      t[2 * k - 1], t[2 * k] = i, i
      if k == binding.BATCH or i == n then
        bbset.set_pairs(t, k)
        k = 0
      end
    end
  else
    local set = bbset.set
    for i = 1, n do set(i, i) end
  end
  return binding.tally()
end

operations["node-create"] = function(n)
  if style == "batched" then error("node-create: BB_STYLE must be naive (v1 tables) or cached (v2 userdata)") end
  local depth, last = 0, nil
  for i = 1, n do
    last = make_node("demographics").country.person[i].gender
    depth = depth + last:depth()
  end
  return string.format("%d %s", depth, last:ref())
end

local parsed = {}

return {
  run = function(param)
    local p = parsed[param]
    if not p then
      local op, n = string.match(tostring(param), "^(%S+) (%d+)$")
      if not operations[op] then error("PARAM must be 'OPERATION N' (traverse, get, set, node-create), got "
                                       .. tostring(param)) end
      p = { operations[op], tonumber(n) }
      parsed[param] = p
    end
    return p[1](p[2])
  end,
}
