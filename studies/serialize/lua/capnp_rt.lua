-- What the Lua code capnpc_lua.py generates shares: the message buffer, pointers, text and list heads.
-- LuaJIT only (FFI and the bit library). Messages are single-segment: the encoder sizes the whole message
-- before writing it, so it never needs a second segment; the decoder refuses far pointers with an error.
--
-- The decoder trusts nothing in a message: every pointer's target is checked against the segment's end,
-- and a traversal budget (8 words read per word of message, as libcapnp's default limit is a multiple of
-- the message) stops a message whose pointers alias one object many times from amplifying the work.
-- Every error is a Lua error whose message starts with "capnp: ".
local ffi = require("ffi")
local bit = require("bit")

local band, rshift, arshift, bor, lshift = bit.band, bit.rshift, bit.arshift, bit.bor, bit.lshift
local u32p = ffi.typeof("uint32_t *")
local cu8p = ffi.typeof("const uint8_t *")
local cu32p = ffi.typeof("const uint32_t *")
local ELEMENT_BITS = {[0] = 0, 1, 8, 16, 32, 64, 64}  -- by list size code (7, composite, is read apart)

local rt = {}

rt.types = {
  u8 = ffi.typeof("uint8_t *"), i8 = ffi.typeof("int8_t *"),
  u16 = ffi.typeof("uint16_t *"), i16 = ffi.typeof("int16_t *"),
  u32 = ffi.typeof("uint32_t *"), i32 = ffi.typeof("int32_t *"),
  u64 = ffi.typeof("uint64_t *"), i64 = ffi.typeof("int64_t *"),
  f32 = ffi.typeof("float *"), f64 = ffi.typeof("double *"),
}

local function fail(msg)
  error("capnp: " .. msg, 0)
end
rt.fail = fail

-- The encoder's buffer: one, grown as needed and zeroed before each message (unset fields are zero).
local buf, buf_bytes = nil, 0
function rt.buffer(bytes)
  if bytes > buf_bytes then
    buf_bytes = math.max(bytes, 2 * buf_bytes, 4096)
    buf = ffi.new("uint8_t[?]", buf_bytes)
  else
    ffi.fill(buf, bytes)
  end
  return buf
end

-- Words an out-of-line text / data / list of n elements of `bytes` bytes takes.
function rt.text_words(s) return rshift(#s + 8, 3) end     -- the bytes and a NUL, rounded up to words
function rt.data_words(s) return rshift(#s + 7, 3) end
function rt.bytes_words(n) return rshift(n + 7, 3) end

-- A struct pointer at byte `at` to a struct at byte `target` (offsets within the segment).
function rt.struct_ptr(p, at, target, dw, pw)
  local w = ffi.cast(u32p, p + at)
  w[0] = lshift((target - at - 8) / 8, 2)
  w[1] = bor(dw, lshift(pw, 16))
end

-- A list pointer: size code (0 void, 1 bit, 2 byte, 3 two bytes, 4 four, 5 eight, 6 pointer, 7 composite)
-- and element count (words for composite lists).
function rt.list_ptr(p, at, target, code, count)
  local w = ffi.cast(u32p, p + at)
  w[0] = bor(lshift((target - at - 8) / 8, 2), 1)
  w[1] = bor(code, lshift(count, 3))
end

-- The tag word of a composite list: the element count where a struct pointer has its offset.
function rt.list_tag(p, at, n, dw, pw)
  local w = ffi.cast(u32p, p + at)
  w[0] = lshift(n, 2)
  w[1] = bor(dw, lshift(pw, 16))
end

-- Text (NUL-terminated) or data at `free`, pointed to from `at`; returns the next free byte.
function rt.write_text(p, at, free, s)
  local n = #s
  rt.list_ptr(p, at, free, 2, n + 1)
  ffi.copy(p + free, s, n)
  return free + lshift(rshift(n + 8, 3), 3)
end

function rt.write_data(p, at, free, s)
  local n = #s
  rt.list_ptr(p, at, free, 2, n)
  ffi.copy(p + free, s, n)
  return free + lshift(rshift(n + 7, 3), 3)
end

-- The message: header (one segment, its size in words) and the segment, as a Lua string.
function rt.finish(p, words)
  local w = ffi.cast(u32p, p)
  w[0], w[1] = 0, words
  return ffi.string(p, 8 + words * 8)
end

-- Float bit patterns, for fields whose default is not zero (stored XOR the default's bits).
local f32u = ffi.new("union { float f; uint32_t u; }")
local f64u = ffi.new("union { double d; uint64_t u; }")
function rt.f32_bits(v) f32u.f = v; return f32u.u end
function rt.f32_from(u) f32u.u = u; return f32u.f end
function rt.f64_bits(v) f64u.d = v; return f64u.u end
function rt.f64_from(u) f64u.u = u; return f64u.d end

-- Decoding state of the message being read: its segment, the segment's size in bytes, what is left of
-- the traversal budget.
local st = {p = nil, limit = 0, budget = 0}
rt.state = st

-- The segment of message string s; s must stay referenced while it is read (parse() holds it).
function rt.open(s)
  local n = #s
  if n < 8 then fail("truncated message: " .. n .. " bytes, no header") end
  local p = ffi.cast(cu8p, s)
  local h = ffi.cast(cu32p, p)
  if h[0] ~= 0 then fail("a message of " .. (h[0] + 1) .. " segments: this decoder reads single-segment ones") end
  local words = h[1]
  if 8 + words * 8 > n then
    fail("truncated message: its header says " .. words * 8 .. " bytes of segment, " .. (n - 8) .. " follow")
  end
  if words < 1 then fail("empty segment: no root pointer") end
  st.p, st.limit, st.budget = p + 8, words * 8, words * 8 + 64
  return st.p
end

local function spend(words)
  local b = st.budget - (words > 0 and words or 1)
  if b < 0 then fail("traversal limit exceeded: pointers reach the same data again and again") end
  st.budget = b
end

-- The pointer word at byte `at`: nil for a null pointer, else its kind, target byte, and the upper half.
local function pointer(at)
  local w = ffi.cast(cu32p, st.p + at)
  local lo, hi = w[0], w[1]
  if lo == 0 and hi == 0 then return nil end
  local kind = band(lo, 3)
  if kind == 2 then fail("far pointer at byte " .. at .. ": multi-segment messages are not read here") end
  if kind == 3 then fail("capability pointer at byte " .. at .. " where data was expected") end
  return kind, at + 8 + arshift(lo, 2) * 8, hi
end

-- A struct pointer: the struct's data byte offset, data words, pointer words; nil when null.
function rt.read_struct(at)
  local kind, target, hi = pointer(at)
  if kind == nil then return nil end
  if kind ~= 0 then fail("a list pointer at byte " .. at .. " where a struct was expected") end
  local dw, pw = band(hi, 0xffff), rshift(hi, 16)
  if target < 0 or target + (dw + pw) * 8 > st.limit then
    fail("struct pointer at byte " .. at .. " points outside the message")
  end
  spend(dw + pw)
  return target, dw, pw
end

-- A list pointer of size code `code`: its first element's byte offset and element count; nil when null.
function rt.read_list(at, code)
  local kind, target, hi = pointer(at)
  if kind == nil then return nil end
  if kind ~= 1 then fail("a struct pointer at byte " .. at .. " where a list was expected") end
  local c, n = band(hi, 7), rshift(hi, 3)
  if c ~= code then fail("list of element size " .. c .. " at byte " .. at .. ", expected " .. code) end
  local bytes = math.floor((n * ELEMENT_BITS[c] + 7) / 8)  -- in doubles: n * 64 overflows 32-bit bit ops
  if target < 0 or target + bytes > st.limit then
    fail("list pointer at byte " .. at .. " points outside the message")
  end
  spend(rshift(bytes + 7, 3))
  return target, n
end

-- A composite list (of structs): first element's byte offset, count, data and pointer words each.
function rt.read_struct_list(at)
  local kind, target, hi = pointer(at)
  if kind == nil then return nil end
  if kind ~= 1 then fail("a struct pointer at byte " .. at .. " where a list was expected") end
  if band(hi, 7) ~= 7 then fail("list at byte " .. at .. " is not a list of structs") end
  local words = rshift(hi, 3)
  if target < 0 or target + 8 + words * 8 > st.limit then
    fail("list pointer at byte " .. at .. " points outside the message")
  end
  local tag = ffi.cast(cu32p, st.p + target)
  if band(tag[0], 3) ~= 0 then fail("bad tag word of the list at byte " .. at) end
  local n, dw, pw = rshift(tag[0], 2), band(tag[1], 0xffff), rshift(tag[1], 16)
  if n * (dw + pw) > words then fail("list at byte " .. at .. " holds more than its words") end
  spend(words > n and words or n)
  return target + 8, n, dw, pw
end

function rt.read_text(at)
  local target, n = rt.read_list(at, 2)
  if target == nil then return nil end
  if n < 1 or st.p[target + n - 1] ~= 0 then fail("text at byte " .. at .. " has no NUL terminator") end
  return ffi.string(st.p + target, n - 1)
end

function rt.read_data(at)
  local target, n = rt.read_list(at, 2)
  if target == nil then return nil end
  return ffi.string(st.p + target, n)
end

return rt
