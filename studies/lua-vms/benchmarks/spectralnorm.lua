-- spectralnorm: nested numeric loops with a function call per matrix element
-- (call overhead, float division, arrays). Power method on the matrix
-- A(i,j) = 1/((i+j)(i+j+1)/2 + i + 1), N x N: 10 rounds of v = AtA u,
-- u = AtA v; returns sqrt(<u,v>/<v,v>), the largest singular value.

local function a(i, j)
  local ij = i + j
  return 1.0 / (ij * (ij + 1) * 0.5 + i + 1)
end

-- y = A x   (0-based matrix indices, 1-based arrays)
local function mul_a(n, x, y)
  for i = 0, n - 1 do
    local s = 0.0
    for j = 0, n - 1 do s = s + a(i, j) * x[j + 1] end
    y[i + 1] = s
  end
end

-- y = A^T x
local function mul_at(n, x, y)
  for i = 0, n - 1 do
    local s = 0.0
    for j = 0, n - 1 do s = s + a(j, i) * x[j + 1] end
    y[i + 1] = s
  end
end

local function mul_ata(n, x, y, tmp)
  mul_a(n, x, tmp)
  mul_at(n, tmp, y)
end

local function run(n)
  local u, v, tmp = {}, {}, {}
  for i = 1, n do u[i] = 1.0; v[i] = 0.0; tmp[i] = 0.0 end
  for _ = 1, 10 do
    mul_ata(n, u, v, tmp)
    mul_ata(n, v, u, tmp)
  end
  local vbv, vv = 0.0, 0.0
  for i = 1, n do
    local vi = v[i]
    vbv = vbv + u[i] * vi
    vv = vv + vi * vi
  end
  return string.format("%.9f", math.sqrt(vbv / vv))
end

return { run = run }
