-- nbody: floating-point arithmetic on table fields (loads/stores, sqrt,
-- pairwise loops), no allocation while stepping. Integrates the Sun and the
-- four gas giants with a symplectic Euler step (dt = 0.01) for `param` steps;
-- returns the total energy before and after.

local PI = math.pi
local SOLAR_MASS = 4 * PI * PI
local DAYS_PER_YEAR = 365.24
local sqrt = math.sqrt

-- initial state: x, y, z (AU), vx, vy, vz (AU/day), mass (solar masses)
local INITIAL = {
  { 0, 0, 0, 0, 0, 0, 1 }, -- Sun
  { 4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
    1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05,
    9.54791938424326609e-04 }, -- Jupiter
  { 8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
    -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05,
    2.85885980666130812e-04 }, -- Saturn
  { 1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
    2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05,
    4.36624404335156298e-05 }, -- Uranus
  { 1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
    2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05,
    5.15138902046611451e-05 }, -- Neptune
}

local function newsystem()
  local bodies = {}
  for i = 1, #INITIAL do
    local s = INITIAL[i]
    bodies[i] = {
      x = s[1], y = s[2], z = s[3],
      vx = s[4] * DAYS_PER_YEAR, vy = s[5] * DAYS_PER_YEAR, vz = s[6] * DAYS_PER_YEAR,
      mass = s[7] * SOLAR_MASS,
    }
  end
  -- give the Sun the momentum that cancels the planets' total momentum
  local px, py, pz = 0, 0, 0
  for i = 1, #bodies do
    local b = bodies[i]
    px = px + b.vx * b.mass
    py = py + b.vy * b.mass
    pz = pz + b.vz * b.mass
  end
  local sun = bodies[1]
  sun.vx = -px / SOLAR_MASS
  sun.vy = -py / SOLAR_MASS
  sun.vz = -pz / SOLAR_MASS
  return bodies
end

local function energy(bodies)
  local e = 0
  local nb = #bodies
  for i = 1, nb do
    local a = bodies[i]
    e = e + 0.5 * a.mass * (a.vx * a.vx + a.vy * a.vy + a.vz * a.vz)
    for j = i + 1, nb do
      local b = bodies[j]
      local dx, dy, dz = a.x - b.x, a.y - b.y, a.z - b.z
      e = e - a.mass * b.mass / sqrt(dx * dx + dy * dy + dz * dz)
    end
  end
  return e
end

local function advance(bodies, nb, dt)
  for i = 1, nb do
    local a = bodies[i]
    local ax, ay, az, am = a.x, a.y, a.z, a.mass
    local avx, avy, avz = a.vx, a.vy, a.vz
    for j = i + 1, nb do
      local b = bodies[j]
      local dx, dy, dz = ax - b.x, ay - b.y, az - b.z
      local d2 = dx * dx + dy * dy + dz * dz
      local mag = dt / (d2 * sqrt(d2))
      local bm = b.mass * mag
      avx = avx - dx * bm
      avy = avy - dy * bm
      avz = avz - dz * bm
      local amag = am * mag
      b.vx = b.vx + dx * amag
      b.vy = b.vy + dy * amag
      b.vz = b.vz + dz * amag
    end
    a.vx, a.vy, a.vz = avx, avy, avz
  end
  for i = 1, nb do
    local b = bodies[i]
    b.x = b.x + dt * b.vx
    b.y = b.y + dt * b.vy
    b.z = b.z + dt * b.vz
  end
end

local function run(steps)
  local bodies = newsystem()
  local before = energy(bodies)
  local nb = #bodies
  for _ = 1, steps do advance(bodies, nb, 0.01) end
  return string.format("%.9f %.9f", before, energy(bodies))
end

return { run = run }
