-- mandelbrot_bit: the Mandelbrot set on an N x N grid, eight pixels packed into each byte with LuaJIT's
-- `bit` library, as the benchmarks-game program writes its PBM bitmap; the bytes are folded into a checksum
-- instead of printed. One of the kinds the Cloudflare post found "bad inconsistent" on LuaJIT. Written for
-- this project; LuaJIT only (the `bit` module), as the luajit-consistency study runs nothing else.
-- PARAM: N, the grid's side (a multiple of 8 keeps rows whole bytes; others pad the last byte as PBM does).
local bit = require("bit")
local bor, lshift = bit.bor, bit.lshift

-- A polynomial hash of the bytes, modulo a prime below 2^31: exact in doubles.
local function fold_in(fold, byte)
  return (fold * 257 + byte) % 2147483629
end

local function row_bytes(y, n, fold)
  local ci = 2 * y / n - 1
  local byte, bits = 0, 0
  for x = 0, n - 1 do
    local cr = 2 * x / n - 1.5
    local zr, zi, zr2, zi2 = 0.0, 0.0, 0.0, 0.0
    local inside = 1
    for _ = 1, 50 do
      zi = 2 * zr * zi + ci
      zr = zr2 - zi2 + cr
      zr2, zi2 = zr * zr, zi * zi
      if zr2 + zi2 > 4 then inside = 0; break end
    end
    byte = bor(lshift(byte, 1), inside)
    bits = bits + 1
    if bits == 8 then
      fold = fold_in(fold, byte)
      byte, bits = 0, 0
    end
  end
  if bits > 0 then  -- the row's last byte, padded with zero bits on the right
    fold = fold_in(fold, lshift(byte, 8 - bits))
  end
  return fold
end

local function run(n)
  n = math.floor(tonumber(n))
  local fold, set = 0, 0
  for y = 0, n - 1 do
    fold = row_bytes(y, n, fold)
  end
  -- A second, independent count of the pixels in the set, so the answer checks the bitmap two ways.
  for y = 0, n - 1, 7 do
    local ci = 2 * y / n - 1
    for x = 0, n - 1, 7 do
      local cr, zr, zi = 2 * x / n - 1.5, 0.0, 0.0
      local escaped = false
      for _ = 1, 50 do
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
        if zr * zr + zi * zi > 4 then escaped = true; break end
      end
      if not escaped then set = set + 1 end
    end
  end
  return string.format("%d:%d", fold, set)
end

return {run = run}
