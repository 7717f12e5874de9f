-- v1-style node objects, as lua-yottadb 1.x made them (making-lua-yottadb-fast.txt): each node is a Lua
-- table holding its varname and a second table of all its subscripts, each checked to be a string or a
-- number; indexing a node with a key that is not a method copies the subscripts into a new node.
-- node("demographics").country.person[3] makes four nodes. Runs unchanged on Lua 5.1, 5.4 and LuaJIT.
local methods = {}
local Node = {}

local function new(varname, subs)
  return setmetatable({ __varname = varname, __subsarray = subs }, Node)
end

Node.__index = function(node, key)
  local method = methods[key]
  if method then return method end
  local t = type(key)
  if t ~= "string" and t ~= "number" then error("node subscript: expected a string or a number", 2) end
  local parent, subs = node.__subsarray, {}
  for i = 1, #parent do subs[i] = parent[i] end
  subs[#parent + 1] = tostring(key)
  return new(node.__varname, subs)
end

function methods.depth(node) return #node.__subsarray end

function methods.name(node)
  local subs = node.__subsarray
  return subs[#subs] or node.__varname
end

-- varname("sub1","sub2",...) with quotes doubled: the same text the v2 node's ref() makes
function methods.ref(node)
  local subs, out = node.__subsarray, {}
  for i = 1, #subs do out[i] = '"' .. subs[i]:gsub('"', '""') .. '"' end
  if #out == 0 then return node.__varname end
  return node.__varname .. "(" .. table.concat(out, ",") .. ")"
end

Node.__tostring = methods.ref

return function(varname, ...)
  local subs = { ... }
  for i = 1, #subs do
    local t = type(subs[i])
    if t ~= "string" and t ~= "number" then error("node subscript: expected a string or a number", 2) end
    subs[i] = tostring(subs[i])
  end
  return new(varname, subs)
end
