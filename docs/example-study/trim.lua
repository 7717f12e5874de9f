-- Loading this file is the benchmark's set-up: the probe times it apart (its start-up), not as an iteration.
local inputs = {}
for i = 1, 1000 do
  inputs[i] = string.rep(" ", i % 7) .. "item " .. i .. string.rep("\t", i % 5)
end

local function trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

return {
  -- One iteration: trim the first `n` strings; the answer (the same for every mechanism) is checked before
  -- anything is timed.
  run = function(n)
    local total = 0
    for i = 1, n do total = total + #trim(inputs[i]) end
    return tostring(total)
  end,
}
