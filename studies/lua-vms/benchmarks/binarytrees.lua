-- binarytrees: allocation-heavy GC stress -- vast numbers of short-lived
-- two-slot tables plus one long-lived tree. Builds perfect binary trees and
-- counts their nodes: a stretch tree of depth n+1, a long-lived tree of depth
-- n, and 2^(n-d+4) throw-away trees for every even depth d from 4 to n.

local function build(depth)
  if depth == 0 then return {} end
  depth = depth - 1
  return { build(depth), build(depth) }
end

local function count(node)
  local left = node[1]
  if left == nil then return 1 end
  return 1 + count(left) + count(node[2])
end

local function run(n)
  local mindepth = 4
  local maxdepth = n
  if maxdepth < mindepth + 2 then maxdepth = mindepth + 2 end

  local parts = {}
  parts[#parts + 1] = string.format("%d", count(build(maxdepth + 1)))

  local longlived = build(maxdepth)

  for depth = mindepth, maxdepth, 2 do
    local trees = 1
    for _ = 1, maxdepth - depth + mindepth do trees = trees * 2 end
    local total = 0
    for _ = 1, trees do
      total = total + count(build(depth))
    end
    parts[#parts + 1] = string.format("%d", total)
  end

  parts[#parts + 1] = string.format("%d", count(longlived))
  return table.concat(parts, " ")
end

return { run = run }
