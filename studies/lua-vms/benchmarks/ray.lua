-- ray: a small recursive ray tracer -- many short-lived 3-vector tables (GC),
-- plain function calls, sqrt and float math. Renders N x N pixels of four
-- spheres on a checkered floor with a point light, hard shadows, Phong
-- highlights and up to 3 mirror bounces; returns a digest of 8-bit pixels.

local sqrt, floor = math.sqrt, math.floor
local EPS = 1e-6
local MAXDEPTH = 3
local MOD = 4294967296

local function vec(x, y, z) return { x = x, y = y, z = z } end
local function add(a, b) return vec(a.x + b.x, a.y + b.y, a.z + b.z) end
local function sub(a, b) return vec(a.x - b.x, a.y - b.y, a.z - b.z) end
local function scale(a, s) return vec(a.x * s, a.y * s, a.z * s) end
local function dot(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end
local function norm(a)
  local l = sqrt(dot(a, a))
  return vec(a.x / l, a.y / l, a.z / l)
end
local function cross(a, b)
  return vec(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
end

local SPHERES = {
  { center = vec(0, 1, 0), radius = 1, color = vec(0.9, 0.2, 0.2), reflect = 0.3 },
  { center = vec(-2.2, 0.7, 1.2), radius = 0.7, color = vec(0.2, 0.8, 0.3), reflect = 0.1 },
  { center = vec(1.9, 0.5, -0.6), radius = 0.5, color = vec(0.25, 0.35, 0.95), reflect = 0.5 },
  { center = vec(0.6, 2.6, 2.5), radius = 0.8, color = vec(0.95, 0.95, 0.95), reflect = 0.7 },
}
local LIGHT = vec(-4, 7, -5)
local AMBIENT = 0.12
local FLOOR_REFLECT = 0.2
local FLOOR_A, FLOOR_B = vec(0.85, 0.85, 0.8), vec(0.15, 0.15, 0.2)

-- nearest intersection: distance, sphere (nil for the floor)
local function intersect(o, d)
  local best, hit = 1e30, false
  local what = nil
  for i = 1, #SPHERES do
    local s = SPHERES[i]
    local oc = sub(o, s.center)
    local b = dot(oc, d)
    local c = dot(oc, oc) - s.radius * s.radius
    local disc = b * b - c
    if disc > 0 then
      local sq = sqrt(disc)
      local t = -b - sq
      if t < EPS then t = -b + sq end
      if t > EPS and t < best then best, hit, what = t, true, s end
    end
  end
  if d.y < -EPS then
    local t = -o.y / d.y
    if t > EPS and t < best then best, hit, what = t, true, nil end
  end
  if not hit then return nil end
  return best, what
end

local function shadowed(p, l, ldist)
  local t = intersect(p, l)
  return t ~= nil and t < ldist
end

local function trace(o, d, depth)
  local t, s = intersect(o, d)
  if t == nil then
    -- sky gradient
    local k = 0.5 * (d.y + 1)
    return vec(0.3 + 0.4 * k, 0.45 + 0.4 * k, 0.7 + 0.3 * k)
  end
  local p = add(o, scale(d, t))
  local n, base, reflect
  if s ~= nil then
    n = norm(sub(p, s.center))
    base, reflect = s.color, s.reflect
  else
    n = vec(0, 1, 0)
    if (floor(p.x) + floor(p.z)) % 2 == 0 then base = FLOOR_A else base = FLOOR_B end
    reflect = FLOOR_REFLECT
  end
  local tolight = sub(LIGHT, p)
  local ldist = sqrt(dot(tolight, tolight))
  local l = scale(tolight, 1 / ldist)
  local lambert = dot(n, l)
  local color = scale(base, AMBIENT)
  if lambert > 0 and not shadowed(p, l, ldist) then
    color = add(color, scale(base, lambert * (1 - AMBIENT)))
    -- Phong highlight, exponent 32 by repeated squaring
    local r = sub(scale(n, 2 * lambert), l)
    local spec = -dot(r, d)
    if spec > 0 then
      spec = spec * spec; spec = spec * spec; spec = spec * spec
      spec = spec * spec; spec = spec * spec
      color = add(color, vec(spec * 0.6, spec * 0.6, spec * 0.6))
    end
  end
  if reflect > 0 and depth < MAXDEPTH then
    local rd = sub(d, scale(n, 2 * dot(n, d)))
    local rc = trace(p, norm(rd), depth + 1)
    color = add(scale(color, 1 - reflect), scale(rc, reflect))
  end
  return color
end

local function quantize(c)
  if c < 0 then c = 0 elseif c > 1 then c = 1 end
  return floor(c * 255 + 0.5)
end

local function run(n)
  local eye = vec(0, 1.6, -6)
  local forward = norm(sub(vec(0, 0.9, 0), eye))
  local right = norm(cross(vec(0, 1, 0), forward))
  local up = cross(forward, right)
  local digest, total = 0, 0
  for y = 0, n - 1 do
    local fy = 1 - 2 * (y + 0.5) / n
    for x = 0, n - 1 do
      local fx = 2 * (x + 0.5) / n - 1
      local dir = norm(add(add(scale(right, fx * 0.7), scale(up, fy * 0.7)), forward))
      local c = trace(eye, dir, 0)
      local r, g, b = quantize(c.x), quantize(c.y), quantize(c.z)
      total = total + r + g + b
      digest = (digest * 31 + (r * 256 + g) * 256 + b) % MOD
    end
  end
  return string.format("%.0f %.0f", total, digest)
end

return { run = run }
