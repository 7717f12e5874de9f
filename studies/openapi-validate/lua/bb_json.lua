-- A small JSON decoder in plain Lua (5.1, 5.4, LuaJIT) that keeps what lua-cjson loses: arrays and
-- objects get the metatables M.array_mt and M.object_mt, so [] and {} stay apart, and null is M.null.
-- Used where that difference matters (the conformance suite, and the validator's own tests).

local M = {}

M.null = setmetatable({}, { __tostring = function() return "null" end })
M.array_mt = { __name = "json array" }
M.object_mt = { __name = "json object" }

local byte, sub, find, char, floor = string.byte, string.sub, string.find, string.char, math.floor

local function utf8_char(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then return char(0xC0 + floor(cp / 0x40), 0x80 + cp % 0x40) end
  if cp < 0x10000 then
    return char(0xE0 + floor(cp / 0x1000), 0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return char(0xF0 + floor(cp / 0x40000), 0x80 + floor(cp / 0x1000) % 0x40, 0x80 + floor(cp / 0x40) % 0x40,
    0x80 + cp % 0x40)
end

local escapes = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

function M.decode(text)
  local pos = 1
  local function fail(what)
    error(string.format("JSON: %s at byte %d", what, pos), 0)
  end
  local function skip()
    pos = find(text, "[^ \t\r\n]", pos) or #text + 1
  end
  local value
  local function string_at()
    pos = pos + 1 -- the opening quote
    local parts = {}
    while true do
      local stop = find(text, '["\\]', pos)
      if not stop then fail("unterminated string") end
      parts[#parts + 1] = sub(text, pos, stop - 1)
      if byte(text, stop) == 34 then
        pos = stop + 1
        return table.concat(parts)
      end
      local e = sub(text, stop + 1, stop + 1)
      if e == "u" then
        local cp = tonumber(sub(text, stop + 2, stop + 5), 16)
        if not cp then fail("bad \\u escape") end
        pos = stop + 6
        if cp >= 0xD800 and cp <= 0xDBFF and sub(text, pos, pos + 1) == "\\u" then
          local low = tonumber(sub(text, pos + 2, pos + 5), 16)
          if low and low >= 0xDC00 and low <= 0xDFFF then
            cp = 0x10000 + (cp - 0xD800) * 0x400 + (low - 0xDC00)
            pos = pos + 6
          end
        end
        parts[#parts + 1] = utf8_char(cp)
      elseif escapes[e] then
        parts[#parts + 1] = escapes[e]
        pos = stop + 2
      else
        fail("bad escape")
      end
    end
  end
  value = function()
    skip()
    local c = sub(text, pos, pos)
    if c == "{" then
      pos = pos + 1
      local out = setmetatable({}, M.object_mt)
      skip()
      if sub(text, pos, pos) == "}" then
        pos = pos + 1
        return out
      end
      while true do
        skip()
        if sub(text, pos, pos) ~= '"' then fail("expected a key") end
        local key = string_at()
        skip()
        if sub(text, pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        out[key] = value()
        skip()
        local d = sub(text, pos, pos)
        pos = pos + 1
        if d == "}" then return out end
        if d ~= "," then fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      pos = pos + 1
      local out = setmetatable({}, M.array_mt)
      skip()
      if sub(text, pos, pos) == "]" then
        pos = pos + 1
        return out
      end
      while true do
        out[#out + 1] = value()
        skip()
        local d = sub(text, pos, pos)
        pos = pos + 1
        if d == "]" then return out end
        if d ~= "," then fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return string_at()
    elseif find(text, "^true", pos) then
      pos = pos + 4
      return true
    elseif find(text, "^false", pos) then
      pos = pos + 5
      return false
    elseif find(text, "^null", pos) then
      pos = pos + 4
      return M.null
    end
    local s, e = find(text, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if not s then fail("unexpected character") end
    local n = tonumber(sub(text, s, e))
    if n == nil then fail("bad number") end
    pos = e + 1
    return n
  end
  local result = value()
  skip()
  if pos <= #text then fail("text after the value") end
  return result
end

return M
