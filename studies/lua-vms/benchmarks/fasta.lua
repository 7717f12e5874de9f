-- fasta: string building driven by a tiny linear congruential generator and a
-- cumulative-probability lookup (float compares, table writes, concat).
-- Produces the classic three FASTA records (2n repeated ALU bases, 3n and 5n
-- weighted random bases, 60 per line); returns the length and a digest.

local ALU =
  "GGCCGGGCGCGGTGGCTCACGCCTGTAATCCCAGCACTTTGG" ..
  "GAGGCCGAGGCGGGCGGATCACCTGAGGTCAGGAGTTCGAGA" ..
  "CCAGCCTGGCCAACATGGTGAAACCCCGTCTCTACTAAAAAT" ..
  "ACAAAAATTAGCCGGGCGTGGTGGCGCGCGCCTGTAATCCCA" ..
  "GCTACTCGGGAGGCTGAGGCAGGAGAATCGCTTGAACCCGGG" ..
  "AGGCGGAGGTTGCAGTGAGCCGAGATCGCGCCACTGCACTCC" ..
  "AGCCTGGGCGACAGAGCGAGACTCCGTCTCAAAAA"

local IUB = {
  { "a", 0.27 }, { "c", 0.12 }, { "g", 0.12 }, { "t", 0.27 },
  { "B", 0.02 }, { "D", 0.02 }, { "H", 0.02 }, { "K", 0.02 },
  { "M", 0.02 }, { "N", 0.02 }, { "R", 0.02 }, { "S", 0.02 },
  { "V", 0.02 }, { "W", 0.02 }, { "Y", 0.02 },
}

local HOMOSAPIENS = {
  { "a", 0.3029549426680 }, { "c", 0.1979883004921 },
  { "g", 0.1975473066391 }, { "t", 0.3015094502008 },
}

local LINE = 60
local IM, IA, IC = 139968, 3877, 29573
local MOD = 4294967296

-- Digest of a string: h = (h * 33 + byte) mod 2^32, exact in doubles.
local byte = string.byte
local function digest(h, s)
  for i = 1, #s do
    h = (h * 33 + byte(s, i)) % MOD
  end
  return h
end

local function run(n)
  local out = {}
  local h = 0
  local seed = 42

  local function emit(line)
    out[#out + 1] = line
    h = digest(h, line)
  end

  -- record ONE: the ALU sequence repeated, cut into lines
  emit(">ONE Homo sapiens alu\n")
  local alulen = #ALU
  local doubled = ALU .. ALU
  local pos, left = 1, 2 * n
  while left > 0 do
    local len = left < LINE and left or LINE
    emit(string.sub(doubled, pos, pos + len - 1) .. "\n")
    pos = pos + len
    if pos > alulen then pos = pos - alulen end
    left = left - len
  end

  -- records TWO and THREE: weighted random choice from cumulative tables
  local function randomrecord(header, freqs, count)
    local chars, cumul = {}, {}
    local acc = 0.0
    for i = 1, #freqs do
      acc = acc + freqs[i][2]
      chars[i] = freqs[i][1]
      cumul[i] = acc
    end
    local nf = #freqs
    emit(header)
    local buf = {}
    local remaining = count
    while remaining > 0 do
      local len = remaining < LINE and remaining or LINE
      for j = 1, len do
        seed = (seed * IA + IC) % IM
        local r = seed / IM
        local k = 1
        while k < nf and cumul[k] <= r do k = k + 1 end
        buf[j] = chars[k]
      end
      buf[len + 1] = "\n"
      emit(table.concat(buf, "", 1, len + 1))
      remaining = remaining - len
    end
  end

  randomrecord(">TWO IUB ambiguity codes\n", IUB, 3 * n)
  randomrecord(">THREE Homo sapiens frequency\n", HOMOSAPIENS, 5 * n)

  local text = table.concat(out)
  return string.format("len=%d digest=%.0f", #text, h)
end

return { run = run }
