-- life: cellular automaton on flat arrays -- neighbour index arithmetic,
-- array reads/writes, branches, two buffers swapped per step. Runs Conway's
-- Game of Life (B3/S23) on a 128 x 128 torus seeded by a deterministic
-- generator for `param` generations; returns population and a grid digest.

local W, H = 128, 128
local MOD = 4294967296

-- precomputed wrap-around row/column offsets (built once at load)
local LEFT, RIGHT, UP, DOWN = {}, {}, {}, {}
for x = 0, W - 1 do
  LEFT[x] = (x - 1) % W
  RIGHT[x] = (x + 1) % W
end
for y = 0, H - 1 do
  UP[y] = ((y - 1) % H) * W
  DOWN[y] = ((y + 1) % H) * W
end

local function seed_grid(grid)
  local state = 4242
  for i = 1, W * H do
    state = (state * 16807) % 2147483647
    -- about 30% alive
    if state % 100 < 30 then grid[i] = 1 else grid[i] = 0 end
  end
end

local function step(cur, nxt)
  for y = 0, H - 1 do
    local row, up, down = y * W, UP[y], DOWN[y]
    for x = 0, W - 1 do
      local l, r = LEFT[x], RIGHT[x]
      local sum = cur[up + l + 1] + cur[up + x + 1] + cur[up + r + 1]
                + cur[row + l + 1] + cur[row + r + 1]
                + cur[down + l + 1] + cur[down + x + 1] + cur[down + r + 1]
      local i = row + x + 1
      if sum == 3 or (sum == 2 and cur[i] == 1) then
        nxt[i] = 1
      else
        nxt[i] = 0
      end
    end
  end
end

local function run(generations)
  local a, b = {}, {}
  seed_grid(a)
  for i = 1, W * H do b[i] = 0 end
  for _ = 1, generations do
    step(a, b)
    a, b = b, a
  end
  local population, digest = 0, 0
  for i = 1, W * H do
    local c = a[i]
    population = population + c
    digest = (digest * 3 + c) % MOD
  end
  return string.format("%d %.0f", population, digest)
end

return { run = run }
