-- The tight loop (the seed's second table): the same validators called in-process, no server, no
-- network. A benchmark file for probes/lua/probe.lua; BB_VALIDATOR picks the validator, the parameter is
-- "WORKLOAD N": N validations per iteration (figures are per validation) of
--   valid   the valid request, every time
--   mix     the corpus's body cases in turn (one valid, one invalid per constraint kind)
-- The answer is how many of the N each validator accepted: every validator must give the same.
--   lua         bb_openapi on the body decoded by lua-cjson (as in nginx), patterns through rex_pcre2
--   go-body     kin-openapi Schema.VisitJSON through the FFI (the body copied into Go, decoded there)
--   go-request  kin-openapi openapi3filter through the FFI, headers serialized to JSON on every call

local study = assert(os.getenv("BB_STUDY"), "BB_STUDY: the study folder")
local which = assert(os.getenv("BB_VALIDATOR"), "BB_VALIDATOR: lua, go-body or go-request")
package.path = study .. "/lua/?.lua;" .. package.path

local cjson = require("cjson")
local workload, n = tostring(arg[3] or ""):match("^(%a+) (%d+)$")
n = tonumber(n)
assert(workload == "valid" or workload == "mix", "parameter: 'valid N' or 'mix N', got " .. tostring(arg[3]))

local read = require("bb_study").read

-- The requests: method, path, query text and table, headers (lower-case, as ngx gives them), body text.
local requests = {}
for _, case in ipairs(cjson.decode(read(study .. "/corpus/cases.json"))) do
  if case.scope == "body" and (workload == "mix" or case.name == "valid") then
    local headers = {}
    for k, v in pairs(case.headers) do headers[k:lower()] = v end
    local query = {}
    for k, v in case.query:gmatch("([^&=]+)=([^&]*)") do query[k] = v end
    requests[#requests + 1] = { method = case.method, path = case.path, query_text = case.query, query = query,
                                headers = headers, body = read(study .. "/corpus/" .. case.body_file) }
  end
end

local validate
if which == "lua" then
  local rex = require("rex_pcre2")
  local check = require("bb_openapi").compile(cjson.decode(read(study .. "/spec/openapi.json")), {
    null = cjson.null,
    decode = cjson.decode,
    regex = function(pattern)
      local compiled = rex.new(pattern, rex.flags().UTF)
      return function(subject) return compiled:find(subject) ~= nil end
    end,
  })
  validate = function(r)
    return check(r.method, r.path, r.query, r.headers, r.body) == true
  end
else
  local lib = require("bb_study").go(assert(os.getenv("BB_LIB"), "BB_LIB: the Go library"),
    study .. "/spec/openapi.json")
  local encode = cjson.encode
  if which == "go-body" then
    validate = function(r) return lib.bb_validate_body(r.body, #r.body) == 0 end
  elseif which == "go-request" then
    validate = function(r)
      return lib.bb_validate_request(r.method, r.path, r.query_text, encode(r.headers), r.body, #r.body) == 0
    end
  else
    error("BB_VALIDATOR: lua, go-body or go-request, got " .. which)
  end
end

local count = #requests
return {
  batch = n,
  run = function()
    local accepted = 0
    for i = 1, n do
      if validate(requests[(i - 1) % count + 1]) then accepted = accepted + 1 end
    end
    return "accepted " .. accepted .. " of " .. n
  end,
}
