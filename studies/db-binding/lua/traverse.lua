-- Count the first `param` nodes of ^BCAT("lvd",*) and sum their subscripts, through the bbgtm module in
-- the binding style BB_STYLE names (naive, cached, batched). Runs unchanged on Lua 5.4 and LuaJIT.
local bbgtm = require("bbgtm")
local style = os.getenv("BB_STYLE")
local BATCH = 1000  -- subscripts per call-in for the batched style

local function naive(limit)
  -- A table per node and its subscripts checked here (and again in C), as lua-yottadb v1 did.
  local count, sum, node = 0, 0, { "^BCAT", "lvd", "" }
  while count < limit do
    for i = 1, #node do
      if type(node[i]) ~= "string" then error("subscript " .. i .. " is not a string") end
    end
    local x = bbgtm.node_next(node)
    if x == "" then break end
    count, sum = count + 1, sum + tonumber(x)
    node = { "^BCAT", "lvd", x }
  end
  return count, sum
end

local function cached(limit)
  local c = bbgtm.cache("^BCAT", "lvd")
  local count, sum, x = 0, 0, ""
  while count < limit do
    x = c:next(x)
    if x == "" then break end
    count, sum = count + 1, sum + tonumber(x)
  end
  return count, sum
end

local function batched(limit)
  local c = bbgtm.cache("^BCAT", "lvd")
  local count, sum, x = 0, 0, ""
  while count < limit do
    local chunk = c:batch(x, math.min(BATCH, limit - count))
    if chunk == "" then break end
    for sub in chunk:gmatch("[^,]+") do
      count, sum, x = count + 1, sum + tonumber(sub), sub
    end
  end
  return count, sum
end

local styles = { naive = naive, cached = cached, batched = batched }
local traverse = styles[style]
if not traverse then error("BB_STYLE must be naive, cached or batched, not " .. tostring(style)) end

return {
  run = function(param)
    local count, sum = traverse(param)
    return string.format("%d %.0f", count, sum)
  end,
}
