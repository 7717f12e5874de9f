-- queens: recursive backtracking -- function calls, multiple returns,
-- boolean array reads/writes and branches, no allocation during the search.
-- Counts all placements of N non-attacking queens on an N x N board, row by
-- row, using occupancy arrays for columns and both diagonals.

local function place(n, row, cols, diag1, diag2, placed)
  if row > n then return 1, placed[1] end
  local found, firstsum = 0, 0
  for c = 1, n do
    local d1, d2 = row + c, row - c + n
    if not cols[c] and not diag1[d1] and not diag2[d2] then
      cols[c], diag1[d1], diag2[d2] = true, true, true
      placed[row] = c
      local f, s = place(n, row + 1, cols, diag1, diag2, placed)
      found = found + f
      firstsum = firstsum + s
      cols[c], diag1[d1], diag2[d2] = false, false, false
    end
  end
  return found, firstsum
end

local function run(n)
  local cols, diag1, diag2, placed = {}, {}, {}, {}
  for i = 1, n do cols[i] = false; placed[i] = 0 end
  for i = 1, 2 * n do diag1[i] = false; diag2[i] = false end
  -- firstsum: sum over all solutions of the first row's column
  local solutions, firstsum = place(n, 1, cols, diag1, diag2, placed)
  return string.format("%d %d", solutions, firstsum)
end

return { run = run }
