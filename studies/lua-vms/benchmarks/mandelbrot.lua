-- mandelbrot: tight floating-point inner loop with early exit, plus bit
-- packing. Renders an N x N bitmap of the Mandelbrot set over [-1.5,0.5] x
-- [-1,1] (50 iterations, escape when |z|^2 > 4), packs 8 pixels per byte as
-- in a PBM image; returns the set-pixel count and a digest of the bytes.

local ITER = 50
local MOD = 4294967296

local function run(n)
  local inset, digest = 0, 0
  for y = 0, n - 1 do
    local ci = 2.0 * y / n - 1.0
    local bits, nbits = 0, 0
    for x = 0, n - 1 do
      local cr = 2.0 * x / n - 1.5
      local zr, zi, tr, ti = 0.0, 0.0, 0.0, 0.0
      local i = 0
      while i < ITER and tr + ti <= 4.0 do
        zi = 2.0 * zr * zi + ci
        zr = tr - ti + cr
        tr = zr * zr
        ti = zi * zi
        i = i + 1
      end
      bits = bits * 2
      if tr + ti <= 4.0 then
        bits = bits + 1
        inset = inset + 1
      end
      nbits = nbits + 1
      if nbits == 8 then
        digest = (digest * 31 + bits) % MOD
        bits, nbits = 0, 0
      end
    end
    if nbits > 0 then
      -- pad the last byte of the row with zero bits
      for _ = nbits + 1, 8 do bits = bits * 2 end
      digest = (digest * 31 + bits) % MOD
    end
  end
  return string.format("%d %.0f", inset, digest)
end

return { run = run }
