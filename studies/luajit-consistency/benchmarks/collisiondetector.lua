-- collisiondetector: the kind of program the Cloudflare post found "bad inconsistent" on LuaJIT, written for
-- this project (its own design, not a port of another suite's code). N aircraft fly circles at different
-- heights and speeds; each frame, every aircraft's motion since the last frame is a segment, the segments are
-- hashed into the 2-D voxels their bounding boxes touch, and within each voxel every pair of segments is
-- tested for a closest approach under the collision radius. Small vector objects with methods (a metatable
-- class), hash tables keyed by voxel and a set of pairs per frame: the mix of allocation, table look-ups and
-- method calls that makes the compiler's choices matter. Runs on any Lua 5.1+ (math only).
-- PARAM: FRAMES (aircraft fixed at 60).
local sqrt, sin, cos, floor = math.sqrt, math.sin, math.cos, math.floor

local Vec = {}
Vec.__index = Vec
local function vec(x, y, z) return setmetatable({x = x, y = y, z = z}, Vec) end
function Vec:plus(o) return vec(self.x + o.x, self.y + o.y, self.z + o.z) end
function Vec:minus(o) return vec(self.x - o.x, self.y - o.y, self.z - o.z) end
function Vec:times(k) return vec(self.x * k, self.y * k, self.z * k) end
function Vec:dot(o) return self.x * o.x + self.y * o.y + self.z * o.z end

local AIRCRAFT, RADIUS, VOXEL = 60, 1.0, 2.0

local function position(i, t)
  -- Each aircraft circles its own centre; pairs of centres overlap, so paths cross.
  local cx, cy = (i % 10) * 3.0, floor(i / 10) * 3.0
  local r, w = 4.0 + (i % 3), 0.05 + (i % 7) * 0.01
  local a = t * w + i * 0.7
  return vec(cx + r * cos(a), cy + r * sin(a), 10.0 + (i % 2) * 0.5)
end

-- The distance of closest approach of two motions, both over the frame's [0, 1].
local function closest(a0, a1, b0, b1)
  local d0 = a0:minus(b0)
  local dv = a1:minus(a0):minus(b1:minus(b0))
  local vv = dv:dot(dv)
  local t = 0.0
  if vv > 1e-12 then
    t = -d0:dot(dv) / vv
    if t < 0 then t = 0 elseif t > 1 then t = 1 end
  end
  local d = d0:plus(dv:times(t))
  return sqrt(d:dot(d))
end

local function voxel_key(vx, vy) return vx * 4096 + vy end

local function frame(before, after)
  local voxels = {}
  for i = 1, AIRCRAFT do
    local p, q = before[i], after[i]
    local x0, x1 = floor((math.min(p.x, q.x) - RADIUS) / VOXEL), floor((math.max(p.x, q.x) + RADIUS) / VOXEL)
    local y0, y1 = floor((math.min(p.y, q.y) - RADIUS) / VOXEL), floor((math.max(p.y, q.y) + RADIUS) / VOXEL)
    for vx = x0, x1 do
      for vy = y0, y1 do
        local key = voxel_key(vx + 1024, vy + 1024)
        local list = voxels[key]
        if not list then list = {}; voxels[key] = list end
        list[#list + 1] = i
      end
    end
  end
  local seen, found, checksum = {}, 0, 0
  for _, list in pairs(voxels) do
    for m = 1, #list - 1 do
      for n = m + 1, #list do
        local i, j = list[m], list[n]
        if i > j then i, j = j, i end
        local pair = i * 1000 + j
        if not seen[pair] then
          seen[pair] = true
          if closest(before[i], after[i], before[j], after[j]) < RADIUS then
            found = found + 1
            checksum = (checksum + pair * pair) % 1000003  -- a sum: the same in any visiting order
          end
        end
      end
    end
  end
  return found, checksum
end

local function run(frames)
  frames = floor(tonumber(frames))
  local before = {}
  for i = 1, AIRCRAFT do before[i] = position(i, 0) end
  local total, sum = 0, 0
  for t = 1, frames do
    local after = {}
    for i = 1, AIRCRAFT do after[i] = position(i, t) end
    local found, checksum = frame(before, after)
    total, sum = total + found, (sum + checksum * t) % 1000003
    before = after
  end
  return string.format("%d:%d", total, sum)
end

return {run = run}
