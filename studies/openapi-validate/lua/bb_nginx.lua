-- The request handler inside nginx (content_by_lua): one module, four ways of validating, chosen by the
-- nginx.conf the serve script writes. Every way answers 200 "valid" or 400 with the reason, so the
-- answer check can hold them to the same verdicts.
--   none        no validation: the ceiling
--   lua         the study's own compiled validator (bb_openapi), on the body decoded by lua-cjson and
--               ngx's own view of path, query and headers; patterns through ngx.re (PCRE, JIT)
--   go-body     kin-openapi's Schema.VisitJSON on the body, through LuaJIT's FFI into the Go library
--   go-request  kin-openapi's openapi3filter on the whole request, as the seed did: headers serialized
--               to JSON, the body copied, the URL re-parsed and an http.Request rebuilt in Go on every call

local M = {}

local ngx = ngx
local mode, validate, lib, ffi, encode

local study = require("bb_study")

-- init_by_lua (the master, before fork): what is safe to share. The Go library is *not* loaded here: a Go
-- runtime started before fork is not in the workers (its threads stay in the master) and they hang.
function M.init(chosen, spec_path)
  mode = chosen
  if mode == "lua" then
    local cjson = require("cjson.safe")
    local openapi = require("bb_openapi")
    local regex_find = ngx.re.find
    validate = openapi.compile(cjson.decode(study.read(spec_path)), {
      null = cjson.null,
      decode = function(text) return cjson.decode(text) end,
      regex = function(pattern)
        return function(subject) return regex_find(subject, pattern, "jo") ~= nil end
      end,
    })
  end
end

-- init_worker_by_lua: each worker loads the Go library itself (after fork).
function M.init_worker(lib_path, spec_path)
  if mode == "go-body" or mode == "go-request" then
    local ok, why = pcall(function() lib, ffi = study.go(lib_path, spec_path) end)
    if not ok then
      ngx.log(ngx.ERR, why)
      lib = nil
    end
    encode = require("cjson").encode
  end
end

-- The FFI library loaded before fork, in the master: kept only for the negative test that shows why not.
function M.init_go_in_master(lib_path, spec_path)
  lib, ffi = study.go(lib_path, spec_path)
  encode = require("cjson").encode
end

local function answer(ok, why)
  if ok then
    ngx.say("valid")
    return
  end
  ngx.status = 400
  ngx.say(why or "invalid")
  return ngx.exit(400)
end

function M.handle()
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if mode == "none" then
    return answer(true)
  elseif mode == "lua" then
    return answer(validate(ngx.req.get_method(), ngx.var.uri, ngx.req.get_uri_args(), ngx.req.get_headers(), body))
  end
  if lib == nil then
    ngx.status = 500
    ngx.say("the Go library did not load; see the error log")
    return ngx.exit(500)
  end
  local verdict
  if mode == "go-body" then
    if body == nil then return answer(false, "the request body is missing") end
    verdict = lib.bb_validate_body(body, #body)
  else
    verdict = lib.bb_validate_request(ngx.req.get_method(), ngx.var.uri, ngx.var.args or "",
      encode(ngx.req.get_headers()), body, body and #body or 0)
  end
  if verdict < 0 then
    ngx.status = 500
    ngx.say(ffi.string(lib.bb_error()))
    return ngx.exit(500)
  end
  return answer(verdict == 0, verdict ~= 0 and ffi.string(lib.bb_error()) or nil)
end

return M
