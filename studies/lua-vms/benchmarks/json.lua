-- json: string-heavy code -- string.find patterns, substrings, gsub escaping,
-- table.concat buffers, recursion. Generates a pseudo-random document of
-- `param` records, encodes it (sorted keys) with the encoder below, decodes it
-- with a recursive-descent decoder, re-encodes and checks the texts match.

local byte, char, sub, find, format = string.byte, string.char, string.sub, string.find, string.format
local concat = table.concat
local floor = math.floor

local NULL = {} -- sentinel for JSON null

---------------------------------------------------------------- PRNG
-- Park-Miller minimal standard generator; all products stay below 2^53.
local function newrng(seed)
  local state = seed
  return function(n) -- integer in [0, n)
    state = (state * 16807) % 2147483647
    return floor(state / 2147483647 * n)
  end
end

---------------------------------------------------------------- encoder
local ESCAPES = {
  ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
}
for c = 0, 31 do
  local ch = char(c)
  if ESCAPES[ch] == nil then ESCAPES[ch] = format("\\u%04x", c) end
end

local function escape_char(c) return ESCAPES[c] end

local encode_value

local function encode_string(s, buf)
  buf[#buf + 1] = '"'
  if find(s, '[%c"\\]') then
    buf[#buf + 1] = (string.gsub(s, '[%c"\\]', escape_char))
  else
    buf[#buf + 1] = s
  end
  buf[#buf + 1] = '"'
end

encode_value = function(v, buf)
  local t = type(v)
  if t == "string" then
    encode_string(v, buf)
  elseif t == "number" then
    if v == floor(v) and v > -1e15 and v < 1e15 then
      buf[#buf + 1] = format("%.0f", v)
    else
      buf[#buf + 1] = format("%.14g", v)
    end
  elseif t == "boolean" then
    buf[#buf + 1] = v and "true" or "false"
  elseif v == NULL then
    buf[#buf + 1] = "null"
  elseif v.__array then
    buf[#buf + 1] = "["
    for i = 1, v.n do
      if i > 1 then buf[#buf + 1] = "," end
      encode_value(v[i], buf)
    end
    buf[#buf + 1] = "]"
  else
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    buf[#buf + 1] = "{"
    for i = 1, #keys do
      if i > 1 then buf[#buf + 1] = "," end
      local k = keys[i]
      encode_string(k, buf)
      buf[#buf + 1] = ":"
      encode_value(v[k], buf)
    end
    buf[#buf + 1] = "}"
  end
end

local function encode(v)
  local buf = {}
  encode_value(v, buf)
  return concat(buf)
end

---------------------------------------------------------------- decoder
local function utf8_char(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then
    return char(0xC0 + floor(cp / 64), 0x80 + cp % 64)
  end
  if cp < 0x10000 then
    return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
              0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
end

local SIMPLE_UNESCAPE = {
  [34] = '"', [92] = "\\", [47] = "/", [98] = "\b", [102] = "\f",
  [110] = "\n", [114] = "\r", [116] = "\t",
}

local Decoder = {}
Decoder.__index = Decoder

local function decode_error(d, msg)
  error(format("json decode error at %d: %s", d.pos, msg))
end

function Decoder:skip()
  local _, e = find(self.text, "^[ \n\r\t]*", self.pos)
  self.pos = e + 1
end

function Decoder:string()
  local text = self.text
  local pos = self.pos + 1 -- after the opening quote
  local parts = {}
  while true do
    local s, e = find(text, '^[^"\\%c]+', pos)
    if s then
      parts[#parts + 1] = sub(text, s, e)
      pos = e + 1
    end
    local c = byte(text, pos)
    if c == 34 then
      self.pos = pos + 1
      return concat(parts)
    elseif c == 92 then
      local esc = byte(text, pos + 1)
      local simple = SIMPLE_UNESCAPE[esc]
      if simple then
        parts[#parts + 1] = simple
        pos = pos + 2
      elseif esc == 117 then -- \uXXXX, with surrogate pairs
        local hex = sub(text, pos + 2, pos + 5)
        if not find(hex, "^%x%x%x%x$") then decode_error(self, "bad \\u escape") end
        local cp = tonumber(hex, 16)
        pos = pos + 6
        if cp >= 0xD800 and cp < 0xDC00 and sub(text, pos, pos + 1) == "\\u" then
          local lo = tonumber(sub(text, pos + 2, pos + 5), 16)
          if lo and lo >= 0xDC00 and lo < 0xE000 then
            cp = 0x10000 + (cp - 0xD800) * 1024 + (lo - 0xDC00)
            pos = pos + 6
          end
        end
        parts[#parts + 1] = utf8_char(cp)
      else
        self.pos = pos
        decode_error(self, "bad escape")
      end
    else
      self.pos = pos
      decode_error(self, "unterminated string")
    end
  end
end

function Decoder:value()
  self:skip()
  local text, pos = self.text, self.pos
  local c = byte(text, pos)
  if c == 34 then
    self.stats.strings = self.stats.strings + 1
    return self:string()
  elseif c == 123 then -- {
    self.stats.objects = self.stats.objects + 1
    local obj = {}
    self.pos = pos + 1
    self:skip()
    if byte(text, self.pos) == 125 then
      self.pos = self.pos + 1
      return obj
    end
    while true do
      self:skip()
      if byte(text, self.pos) ~= 34 then decode_error(self, "expected key") end
      local key = self:string()
      self:skip()
      if byte(text, self.pos) ~= 58 then decode_error(self, "expected ':'") end
      self.pos = self.pos + 1
      obj[key] = self:value()
      self:skip()
      local d = byte(text, self.pos)
      self.pos = self.pos + 1
      if d == 125 then return obj end
      if d ~= 44 then decode_error(self, "expected ',' or '}'") end
    end
  elseif c == 91 then -- [
    self.stats.arrays = self.stats.arrays + 1
    local arr = { __array = true, n = 0 }
    self.pos = pos + 1
    self:skip()
    if byte(text, self.pos) == 93 then
      self.pos = self.pos + 1
      return arr
    end
    local n = 0
    while true do
      n = n + 1
      arr[n] = self:value()
      arr.n = n
      self:skip()
      local d = byte(text, self.pos)
      self.pos = self.pos + 1
      if d == 93 then return arr end
      if d ~= 44 then decode_error(self, "expected ',' or ']'") end
    end
  elseif c == 116 and sub(text, pos, pos + 3) == "true" then
    self.pos = pos + 4
    return true
  elseif c == 102 and sub(text, pos, pos + 4) == "false" then
    self.pos = pos + 5
    return false
  elseif c == 110 and sub(text, pos, pos + 3) == "null" then
    self.pos = pos + 4
    return NULL
  else
    local s, e = find(text, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if not s then decode_error(self, "unexpected character") end
    local v = tonumber(sub(text, s, e))
    if v == nil then decode_error(self, "bad number") end
    self.pos = e + 1
    self.stats.numbers = self.stats.numbers + 1
    self.stats.sum = self.stats.sum + v
    return v
  end
end

local function decode(text)
  local d = setmetatable({ text = text, pos = 1,
    stats = { strings = 0, objects = 0, arrays = 0, numbers = 0, sum = 0 } }, Decoder)
  local v = d:value()
  d:skip()
  if d.pos <= #text then decode_error(d, "trailing garbage") end
  return v, d.stats
end

---------------------------------------------------------------- document generator
local WORDS = {
  "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
  "iota", "kappa", "lambda", "mu", "caf\195\169", "na\195\175ve", "\226\130\172uro",
  "quote\"d", "back\\slash", "new\nline", "tab\there", "bell\7", "slash/ok",
}
local TAGS = { "red", "green", "blue", "cyan", "magenta", "yellow", "black" }

local function newarray(items)
  items.__array = true
  items.n = #items
  return items
end

local function gen_document(records, rnd)
  local list = {}
  for i = 1, records do
    local name = {}
    for j = 1, 1 + rnd(4) do name[j] = WORDS[1 + rnd(#WORDS)] end
    local tags = {}
    for j = 1, rnd(5) do tags[j] = TAGS[1 + rnd(#TAGS)] end
    local points = {}
    for j = 1, 1 + rnd(3) do
      points[j] = newarray({ rnd(2001) - 1000, (rnd(200001) - 100000) / 64,
                             (rnd(1000) + 1) * 1e-7 })
    end
    local rec = {
      id = i,
      name = concat(name, " "),
      active = rnd(2) == 1,
      score = rnd(1000000) / 1000,
      ratio = (rnd(999) + 1) / 7,
      tags = newarray(tags),
      points = newarray(points),
      parent = (i > 1 and rnd(3) > 0) and (1 + rnd(i - 1)) or NULL,
      meta = { created = 1500000000 + rnd(100000000), ["kind of"] = WORDS[1 + rnd(#WORDS)],
               empty = {}, none = newarray({}) },
    }
    list[i] = rec
  end
  return { version = 3, generator = "bridgebench", records = newarray(list) }
end

local function run(records)
  local rnd = newrng(20240601)
  local doc = gen_document(records, rnd)
  local text = encode(doc)
  local back, stats = decode(text)
  local text2 = encode(back)
  if text2 ~= text then error("json: round trip changed the document") end
  return format("len=%d strings=%d objects=%d arrays=%d numbers=%d sum=%.6f",
    #text, stats.strings, stats.objects, stats.arrays, stats.numbers, stats.sum)
end

return { run = run }
