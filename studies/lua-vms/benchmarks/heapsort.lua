-- heapsort: index arithmetic, float compares and array swaps in sift loops,
-- no allocation after the fill. Sorts `param` pseudo-random floats (linear
-- congruential generator) in place with a binary max-heap: build the heap,
-- then repeatedly move the maximum to the end; checks the order.

local IM, IA, IC = 139968, 3877, 29573

local function run(n)
  local a = {}
  local seed = 42
  for i = 1, n do
    seed = (seed * IA + IC) % IM
    a[i] = seed / IM
  end

  local function sift(first, last)
    -- restore the heap property below index `first` (heap is a[1..last])
    local root = first
    local v = a[root]
    while true do
      local child = root * 2
      if child > last then break end
      if child < last and a[child] < a[child + 1] then child = child + 1 end
      if a[child] <= v then break end
      a[root] = a[child]
      root = child
    end
    a[root] = v
  end

  for i = (n - n % 2) / 2, 1, -1 do sift(i, n) end
  for last = n, 2, -1 do
    a[1], a[last] = a[last], a[1]
    sift(1, last - 1)
  end

  local sum = 0
  for i = 1, n do
    if i > 1 and a[i - 1] > a[i] then error("heapsort: array not sorted") end
    sum = sum + a[i] * (i % 7 + 1)
  end
  local mid = (n - n % 2) / 2
  if mid < 1 then mid = 1 end
  return string.format("%.9f %.9f %.9f %.6f", a[1], a[mid], a[n], sum)
end

return { run = run }
