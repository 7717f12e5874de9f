-- The three binding styles over the bbgtm module, as a user of each style would write the loop. Each style
-- opens a two-level global G(s1, *) and returns an object with:
--   o.each(limit, fn)       fn(x) for up to limit subscripts x, in order from the first; returns the count
--   o.get_each(limit, fn)   fn(x, value) likewise, with each node's value
--   o.get(x), o.set(x, value)
--   o.set_pairs(t, k)       set the k pairs t[1..2k] (subscript, value): one call-in when batched
-- Runs unchanged on Lua 5.4 and LuaJIT.
local bbgtm = require("bbgtm")

local BATCH = 256  -- nodes per call-in for the batched style (M builds its reply faster in short strings)

local function checked(node)
  for i = 1, #node do
    if type(node[i]) ~= "string" then error("subscript " .. (i - 1) .. " is not a string", 3) end
  end
  return node
end

-- naive (lua-yottadb v1): a new Lua table per node, each subscript checked here (and again in C), the
-- reference rebuilt by C on every call
local function naive(g, s1)
  local o = {}
  local node_next, node_get, node_set = bbgtm.node_next, bbgtm.node_get, bbgtm.node_set
  function o.each(limit, fn)
    local count, x = 0, ""
    while count < limit do
      x = node_next(checked({ g, s1, x }))
      if x == "" then break end
      count = count + 1
      fn(x)
    end
    return count
  end
  function o.get(x) return node_get(checked({ g, s1, tostring(x) })) end
  function o.set(x, v) node_set(checked({ g, s1, tostring(x) }), v) end
  function o.get_each(limit, fn) return o.each(limit, function(x) fn(x, o.get(x)) end) end
  function o.set_pairs(t, k) for i = 1, k do o.set(t[2 * i - 1], t[2 * i]) end end
  return o
end

-- cached (the seed's fix): one userdata with the prepared global and first subscript and kept call-in
-- handles; only the last subscript crosses
local function cached(g, s1)
  local o, c = {}, bbgtm.cache(g, s1)
  function o.each(limit, fn)
    local count, x = 0, ""
    while count < limit do
      x = c:next(x)
      if x == "" then break end
      count = count + 1
      fn(x)
    end
    return count
  end
  function o.get(x) return c:get(x) end
  function o.set(x, v) c:set(x, v) end
  function o.get_each(limit, fn) return o.each(limit, function(x) fn(x, c:get(x)) end) end
  function o.set_pairs(t, k) for i = 1, k do c:set(t[2 * i - 1], t[2 * i]) end end
  return o
end

-- batched: the cached object, moving up to BATCH nodes a call-in through a table kept between calls
local function batched(g, s1)
  local o, c, chunk = cached(g, s1), bbgtm.cache(g, s1), {}
  function o.each(limit, fn)
    local count, x = 0, ""
    while count < limit do
      local k = c:batch(x, math.min(BATCH, limit - count), chunk)
      if k == 0 then break end
      for i = 1, k do fn(chunk[i]) end
      count, x = count + k, chunk[k]
    end
    return count
  end
  function o.get_each(limit, fn)
    local count, x = 0, ""
    while count < limit do
      local k = c:getbatch(x, math.min(BATCH, limit - count), chunk)
      if k == 0 then break end
      for i = 1, k do fn(chunk[2 * i - 1], chunk[2 * i]) end
      count, x = count + k, chunk[2 * k - 1]
    end
    return count
  end
  function o.set_pairs(t, k)
    for first = 0, k - 1, BATCH do
      local n = math.min(BATCH, k - first)
      if first == 0 and n == k then
        c:setbatch(t, k)
      else
        for i = 1, 2 * n do chunk[i] = t[2 * first + i] end
        c:setbatch(chunk, n)
      end
    end
  end
  return o
end

return { naive = naive, cached = cached, batched = batched, BATCH = BATCH, clear = bbgtm.clear,
         tally = bbgtm.tally }
