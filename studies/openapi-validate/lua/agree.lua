-- The agreement corpus outside nginx: every case of corpus/cases.json through each validator, one line
-- of JSON per case: {"case": NAME, "scope": "body"|"request", "valid": EXPECTED, "verdicts": {...}}.
--   lua-bbjson  bb_openapi on the body decoded by bb_json ([] and {} kept apart)
--   lua-cjson   bb_openapi on the body decoded by lua-cjson (as in nginx)
--   go-body     kin-openapi Schema.VisitJSON through the FFI (if BB_LIB names the library)
--   go-request  kin-openapi openapi3filter through the FFI (if BB_LIB names the library)
-- Usage: luajit agree.lua STUDY_DIR [EXTRA_CASES.json]   (needs lua-cjson and rex_pcre2)

local study = assert(arg[1], "usage: agree.lua STUDY_DIR [EXTRA_CASES.json]")
package.path = study .. "/lua/?.lua;" .. package.path

local cjson = require("cjson")
local bb_json = require("bb_json")
local openapi = require("bb_openapi")
local rex = require("rex_pcre2")

local read = require("bb_study").read

local function regex(pattern)
  local compiled = rex.new(pattern, rex.flags().UTF)
  return function(subject) return compiled:find(subject) ~= nil end
end

local spec_text = read(study .. "/spec/openapi.json")
local validators = {}
validators["lua-bbjson"] = openapi.compile(bb_json.decode(spec_text), {
  null = bb_json.null, array_mt = bb_json.array_mt, object_mt = bb_json.object_mt, decode = bb_json.decode,
  regex = regex })
validators["lua-cjson"] = openapi.compile(cjson.decode(spec_text), { null = cjson.null, decode = cjson.decode,
  regex = regex })

local lib_path = os.getenv("BB_LIB")
local lib
if lib_path and lib_path ~= "" then
  lib = require("bb_study").go(lib_path, study .. "/spec/openapi.json")
end

local cases = cjson.decode(read(study .. "/corpus/cases.json"))
if arg[2] then
  for _, case in ipairs(cjson.decode(read(arg[2]))) do cases[#cases + 1] = case end
end
for _, case in ipairs(cases) do
  local body = case.body or read(study .. "/corpus/" .. case.body_file)
  local headers = {}
  for k, v in pairs(case.headers) do headers[k:lower()] = v end
  local query = {}
  for k, v in case.query:gmatch("([^&=]+)=([^&]*)") do query[k] = v end
  local verdicts = {}
  for name, validate in pairs(validators) do
    verdicts[name] = validate(case.method, case.path, query, headers, body) == true
  end
  if lib then
    verdicts["go-body"] = lib.bb_validate_body(body, #body) == 0
    verdicts["go-request"] = lib.bb_validate_request(case.method, case.path, case.query, cjson.encode(headers), body,
      #body) == 0
  end
  print(cjson.encode({ case = case.name, scope = case.scope, valid = case.valid, verdicts = verdicts }))
end
