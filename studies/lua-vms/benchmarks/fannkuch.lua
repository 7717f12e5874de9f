-- fannkuch: small-integer array shuffling in tight loops (indexing, branches),
-- no allocation in the hot path. Walks all n! permutations in rotation order,
-- counting "pancake flips" (reverse the first k+1 items, k = first item) until
-- 0 leads; returns the alternating-sign checksum and the maximum flip count.

local function run(n)
  local perm, work, count = {}, {}, {}
  for i = 1, n do perm[i] = i - 1; work[i] = 0; count[i] = 0 end

  local maxflips, checksum, sign = 0, 0, 1
  local r = n
  while true do
    -- reset the rotation counters below r
    while r ~= 1 do
      count[r] = r
      r = r - 1
    end

    -- count flips of the current permutation; the front item is kept in k
    -- instead of work[1]
    local k = perm[1]
    if k ~= 0 then
      for i = 2, n do work[i] = perm[i] end
      local flips = 1
      while true do
        local nextk = work[k + 1]
        work[k + 1] = k
        if nextk == 0 then break end
        local lo, hi = 2, k
        while lo < hi do
          work[lo], work[hi] = work[hi], work[lo]
          lo = lo + 1
          hi = hi - 1
        end
        flips = flips + 1
        k = nextk
      end
      if flips > maxflips then maxflips = flips end
      checksum = checksum + sign * flips
    end
    sign = -sign

    -- advance to the next permutation: rotate the first r+1 items left by one
    while true do
      if r == n then
        return string.format("%d %d", checksum, maxflips)
      end
      local head = perm[1]
      for i = 1, r do perm[i] = perm[i + 1] end
      perm[r + 1] = head
      local c = count[r + 1] - 1
      count[r + 1] = c
      if c > 0 then break end
      r = r + 1
    end
  end
end

return { run = run }
