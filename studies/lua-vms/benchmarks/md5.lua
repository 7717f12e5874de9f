-- md5: 32-bit integer arithmetic emulated portably (no bit library): 8-bit
-- lookup tables for AND/OR/XOR, rotations by multiply/divide by powers of two,
-- string.byte access. Computes the RFC 1321 MD5 digest of a generated message
-- of `param` bytes; identical code on Lua 5.1, 5.4 and LuaJIT.

local byte, char, format = string.byte, string.char, string.format
local concat = table.concat

local TWO32 = 4294967296

---------------------------------------------------------------- 8-bit tables
-- index: a * 256 + b + 1
local AND8, XOR8, OR8 = {}, {}, {}
do
  local and4, xor4, or4 = {}, {}, {}
  for a = 0, 15 do
    for b = 0, 15 do
      local x, y, bit = a, b, 1
      local r_and, r_xor, r_or = 0, 0, 0
      for _ = 1, 4 do
        local xa, yb = x % 2, y % 2
        if xa == 1 and yb == 1 then r_and = r_and + bit end
        if xa ~= yb then r_xor = r_xor + bit end
        if xa == 1 or yb == 1 then r_or = r_or + bit end
        x, y, bit = (x - xa) / 2, (y - yb) / 2, bit * 2
      end
      local k = a * 16 + b + 1
      and4[k], xor4[k], or4[k] = r_and, r_xor, r_or
    end
  end
  for a = 0, 255 do
    local al = a % 16
    local ah = (a - al) / 16
    for b = 0, 255 do
      local bl = b % 16
      local bh = (b - bl) / 16
      local hi, lo = ah * 16 + bh + 1, al * 16 + bl + 1
      local k = a * 256 + b + 1
      AND8[k] = and4[hi] * 16 + and4[lo]
      XOR8[k] = xor4[hi] * 16 + xor4[lo]
      OR8[k] = or4[hi] * 16 + or4[lo]
    end
  end
end

---------------------------------------------------------------- constants
local T = {
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
}
local SHIFT = {
  7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21,
}
local POW2 = {}
do
  local p = 1
  for i = 0, 32 do POW2[i] = p; p = p * 2 end
end

-- message word index (1-based) used by step i (0..63)
local WORD = {}
for i = 0, 63 do
  local g
  if i < 16 then g = i
  elseif i < 32 then g = (5 * i + 1) % 16
  elseif i < 48 then g = (3 * i + 5) % 16
  else g = (7 * i) % 16 end
  WORD[i] = g + 1
end

---------------------------------------------------------------- round functions
-- each combines three 32-bit words byte by byte
local function fF(x, y, z) -- (x and y) or (not x and z) == z xor (x and (y xor z))
  local r, m = 0, 1
  for _ = 1, 4 do
    local xb, yb, zb = x % 256, y % 256, z % 256
    x, y, z = (x - xb) / 256, (y - yb) / 256, (z - zb) / 256
    r = r + XOR8[zb * 256 + AND8[xb * 256 + XOR8[yb * 256 + zb + 1] + 1] + 1] * m
    m = m * 256
  end
  return r
end

local function fG(x, y, z) -- (x and z) or (y and not z) == y xor (z and (x xor y))
  local r, m = 0, 1
  for _ = 1, 4 do
    local xb, yb, zb = x % 256, y % 256, z % 256
    x, y, z = (x - xb) / 256, (y - yb) / 256, (z - zb) / 256
    r = r + XOR8[yb * 256 + AND8[zb * 256 + XOR8[xb * 256 + yb + 1] + 1] + 1] * m
    m = m * 256
  end
  return r
end

local function fH(x, y, z) -- x xor y xor z
  local r, m = 0, 1
  for _ = 1, 4 do
    local xb, yb, zb = x % 256, y % 256, z % 256
    x, y, z = (x - xb) / 256, (y - yb) / 256, (z - zb) / 256
    r = r + XOR8[xb * 256 + XOR8[yb * 256 + zb + 1] + 1] * m
    m = m * 256
  end
  return r
end

local function fI(x, y, z) -- y xor (x or not z)
  local r, m = 0, 1
  for _ = 1, 4 do
    local xb, yb, zb = x % 256, y % 256, z % 256
    x, y, z = (x - xb) / 256, (y - yb) / 256, (z - zb) / 256
    r = r + XOR8[yb * 256 + OR8[xb * 256 + (255 - zb) + 1] + 1] * m
    m = m * 256
  end
  return r
end

local function rotl(x, s)
  local keep = POW2[32 - s]
  local lo = x % keep
  return lo * POW2[s] + (x - lo) / keep
end

---------------------------------------------------------------- digest
local function md5(msg)
  local len = #msg
  -- padding: 0x80, zeros up to 56 mod 64, then the bit length (little endian)
  local zeros = (55 - len) % 64
  local bits = len * 8
  local lenbytes = {}
  for i = 1, 8 do
    local b = bits % 256
    lenbytes[i] = char(b)
    bits = (bits - b) / 256
  end
  msg = msg .. "\128" .. string.rep("\0", zeros) .. concat(lenbytes)

  local a0, b0, c0, d0 = 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476
  local X = {}
  for chunk = 1, #msg, 64 do
    for j = 0, 15 do
      local p = chunk + j * 4
      local w0, w1, w2, w3 = byte(msg, p, p + 3)
      X[j + 1] = ((w3 * 256 + w2) * 256 + w1) * 256 + w0
    end
    local a, b, c, d = a0, b0, c0, d0
    for i = 0, 63 do
      local f
      if i < 16 then f = fF(b, c, d)
      elseif i < 32 then f = fG(b, c, d)
      elseif i < 48 then f = fH(b, c, d)
      else f = fI(b, c, d) end
      local sum = (a + f + X[WORD[i]] + T[i + 1]) % TWO32
      local s = SHIFT[(i - i % 16) / 4 + i % 4 + 1]
      a, d, c = d, c, b
      b = (b + rotl(sum, s)) % TWO32
    end
    a0 = (a0 + a) % TWO32
    b0 = (b0 + b) % TWO32
    c0 = (c0 + c) % TWO32
    d0 = (d0 + d) % TWO32
  end

  local out = {}
  local words = { a0, b0, c0, d0 }
  for i = 1, 4 do
    local w = words[i]
    for _ = 1, 4 do
      local bb = w % 256
      out[#out + 1] = format("%02x", bb)
      w = (w - bb) / 256
    end
  end
  return concat(out)
end

---------------------------------------------------------------- driver
local function message(n)
  local parts = {}
  local state = 12345
  for i = 1, n do
    state = (state * 16807) % 2147483647
    parts[i] = char(32 + state % 95)
  end
  return concat(parts)
end

local function run(n)
  local digest = md5(message(n))
  -- the empty string must always give the published digest
  if md5("") ~= "d41d8cd98f00b204e9800998ecf8427e" then error("md5 self-test failed") end
  return digest
end

return { run = run }
