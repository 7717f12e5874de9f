-- knucleotide: hash-table counting keyed by substrings (string.sub creates and
-- interns many short strings) plus a two-key sort. Generates the fasta
-- benchmark's third record (5n bases), counts all k-mers for k = 1,2,3,4,6,
-- 12,18; returns 1-mer percentages, the 2-mer order and five k-mer counts.

local sub, format, concat = string.sub, string.format, table.concat

local IM, IA, IC = 139968, 3877, 29573
local BASES = { "A", "C", "G", "T" }
local CUMUL = {}
do
  local p = { 0.3029549426680, 0.1979883004921, 0.1975473066391, 0.3015094502008 }
  local acc = 0.0
  for i = 1, 4 do acc = acc + p[i]; CUMUL[i] = acc end
end
local TARGETS = { "GGT", "GGTA", "GGTATT", "GGTATTTTAATT", "GGTATTTTAATTTATAGT" }

local function sequence(n)
  -- same generator state as the fasta benchmark: the 3n draws of its second
  -- record come first, then 5n bases of the third record
  local seed = 42
  for _ = 1, 3 * n do seed = (seed * IA + IC) % IM end
  local buf = {}
  for i = 1, 5 * n do
    seed = (seed * IA + IC) % IM
    local r = seed / IM
    local k = 1
    while k < 4 and CUMUL[k] <= r do k = k + 1 end
    buf[i] = BASES[k]
  end
  return concat(buf)
end

local function count(seq, k)
  local counts = {}
  for i = 1, #seq - k + 1 do
    local key = sub(seq, i, i + k - 1)
    counts[key] = (counts[key] or 0) + 1
  end
  return counts
end

-- entries sorted by descending count, then ascending key
local function sorted(counts)
  local list = {}
  for key, c in pairs(counts) do list[#list + 1] = { key, c } end
  table.sort(list, function(a, b)
    if a[2] ~= b[2] then return a[2] > b[2] end
    return a[1] < b[1]
  end)
  return list
end

local function run(n)
  local seq = sequence(n)
  local total = #seq

  local parts = {}
  local ones = sorted(count(seq, 1))
  for i = 1, #ones do
    parts[#parts + 1] = format("%s%.3f", ones[i][1], 100 * ones[i][2] / total)
  end

  local twos = sorted(count(seq, 2))
  local order, weighted = {}, 0
  for i = 1, #twos do
    order[i] = twos[i][1]
    weighted = weighted + twos[i][2] * i
  end
  parts[#parts + 1] = concat(order) .. format("/%d", weighted)

  for i = 1, #TARGETS do
    local t = TARGETS[i]
    parts[#parts + 1] = format("%d", count(seq, #t)[t] or 0)
  end
  return concat(parts, " ")
end

return { run = run }
