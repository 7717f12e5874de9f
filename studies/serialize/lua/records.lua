-- The messages every codec of the study encodes and decodes: N log records or N address books, made by a
-- fixed pseudo-random sequence, so every VM and every process builds the same ones. Runs unchanged on Lua
-- 5.1, 5.4 and LuaJIT (arithmetic only, no bit operators).
--
-- Values are chosen to survive every codec exactly: integers below 10^14 and floats that print in 14
-- significant digits (lua-cjson writes numbers with 14, and so does dkjson through LuaJIT's tostring: a
-- 64-bit id of 16 digits comes back changed from both) and, for Float32 fields, multiples of 1/1024.
local records = {}

-- Park and Miller's minimal standard generator: its products stay below 2^46, exact in a double, so Lua
-- 5.1's floats and 5.4's integers draw the same sequence. A draw takes 15 bits of each of two steps.
local function generator(seed)
  local state = seed
  local function step()
    state = state * 16807 % 2147483647
    return math.floor(state / 65536)
  end
  return function(n)  -- an integer in [0, n), n <= 2^30
    local high = step()
    return (high * 32768 + step()) % n
  end
end

local METHODS = {"GET", "GET", "GET", "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"}
local CACHE = {"HIT", "HIT", "MISS", "EXPIRED", "BYPASS", "UNKNOWN"}
local HOSTS = {"www.example.com", "api.example.net", "static.example.org", "example.com", "cdn.example.io"}
local PATHS = {"/", "/index.html", "/api/v1/users", "/static/app.js", "/images/logo.png", "/search",
               "/api/v1/orders/checkout", "/favicon.ico"}
local AGENTS = {
  "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1",
  "curl/7.88.1", "Go-http-client/1.1", "python-requests/2.31.0",
}
local HEADERS = {"accept", "accept-encoding", "accept-language", "cookie", "x-forwarded-for", "cache-control"}
local TAGS = {"waf", "bot", "rate-limited", "h2", "h3", "tls13", "ipv6", "cached", "origin-error"}

function records.log(n)
  local r = generator(20140331)
  local out = {}
  for i = 1, n do
    local headers = {}
    for h = 1, 1 + r(5) do
      headers[h] = {name = HEADERS[1 + r(#HEADERS)], value = "v" .. r(100000) .. "/" .. string.rep("x", r(24))}
    end
    local tags = {}
    for t = 1, r(4) do tags[t] = TAGS[1 + r(#TAGS)] end
    local rec = {
      timestamp = 1700000000000 + i * 37 + r(1000),
      zoneId = 1 + r(4000000) * 1000,
      clientIp = (10 + r(200)) .. "." .. r(256) .. "." .. r(256) .. "." .. r(256),
      clientPort = 1024 + r(64000),
      method = METHODS[1 + r(#METHODS)],
      host = HOSTS[1 + r(#HOSTS)],
      uri = PATHS[1 + r(#PATHS)] .. (r(3) == 0 and ("?q=" .. r(1000000)) or ""),
      status = ({200, 200, 200, 200, 304, 404, 500, 301})[1 + r(8)],
      bytesSent = r(2000000) * 1000 + r(1000),
      requestTime = r(100000) / 1000,
      ssl = r(4) ~= 0,
      cacheStatus = CACHE[1 + r(#CACHE)],
      userAgent = AGENTS[1 + r(#AGENTS)],
      referer = r(2) == 0 and "" or ("https://" .. HOSTS[1 + r(#HOSTS)] .. "/"),
      upstream = {addr = "192.0.2." .. r(256) .. ":" .. (8000 + r(100)), status = ({200, 200, 502, 504})[1 + r(4)],
                  responseTime = r(65536) / 1024, attempts = 1 + r(3)},
      headers = headers,
      tags = tags,
      edgeRatio = r(1025) / 1024,
      rayId = r(16384) * 4294967296 + r(65536) * 65536 + r(65536),  -- below 10^14: see the top
      colo = r(300) - 1,
    }
    out[i] = rec
  end
  return out
end

local FIRST = {"Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy"}
local LAST = {"Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Johnson", "Davies"}
local PHONE = {"MOBILE", "HOME", "WORK"}

-- An address book of 2 to 6 people, each with 0 to 3 phones and one of the four employments.
function records.addressbook(n)
  local r = generator(20140401)
  local out = {}
  for i = 1, n do
    local people = {}
    for p = 1, 2 + r(5) do
      local first, last = FIRST[1 + r(#FIRST)], LAST[1 + r(#LAST)]
      local phones = {}
      for k = 1, r(4) do
        phones[k] = {number = "555-" .. (1000 + r(9000)), type = PHONE[1 + r(3)]}
      end
      local kind, employment = r(4), nil
      if kind == 0 then employment = {unemployed = "Void"}
      elseif kind == 1 then employment = {employer = last .. " & Co."}
      elseif kind == 2 then employment = {school = "University of " .. LAST[1 + r(#LAST)]}
      else employment = {selfEmployed = "Void"} end
      people[p] = {id = i * 100 + p, name = first .. " " .. last,
                   email = string.lower(first) .. "." .. string.lower(last) .. "@example.com",
                   phones = phones, employment = employment}
    end
    out[i] = {people = people}
  end
  return out
end

-- A canonical text of a value: keys sorted, numbers as %.17g (an integer and the same float print alike),
-- strings with their length. Two tables with the same content give the same text, whatever codec made them.
local function canon(v, out)
  local t = type(v)
  if t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    out[#out + 1] = "{"
    for _, k in ipairs(keys) do
      local value = v[k]
      if value == nil then value = v[tonumber(k)] end
      out[#out + 1] = k
      out[#out + 1] = "="
      canon(value, out)
      out[#out + 1] = ";"
    end
    out[#out + 1] = "}"
  elseif t == "number" then
    out[#out + 1] = string.format("%.17g", v)
  elseif t == "string" then
    out[#out + 1] = #v .. ":" .. v
  else
    out[#out + 1] = tostring(v)
  end
end

function records.canonical(v)
  local out = {}
  canon(v, out)
  return table.concat(out)
end

-- A 32-bit polynomial hash of a string (arithmetic that is exact in doubles), as 8 hex digits.
function records.hash(s)
  local h = 2166136261
  for i = 1, #s do
    h = (h * 31 + string.byte(s, i)) % 4294967296
  end
  return string.format("%08x", h)
end

return records
