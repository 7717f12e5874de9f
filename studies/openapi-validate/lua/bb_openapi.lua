-- An OpenAPI 3.0 request validator built on bb_jsonschema: the spec is compiled once, per operation, into
-- checks of its path, query and header parameters and a compiled body schema; a request then runs only
-- those. Runs unchanged on Lua 5.1, 5.4 and LuaJIT (and in nginx, where the caller passes ngx's pieces).
--
--   local openapi = require("bb_openapi")
--   local validate = openapi.compile(spec, options)   -- options as bb_jsonschema's, plus decode(text)
--   local ok, why = validate(method, path, query_args, headers, body_text)
--
-- query_args: name -> string (the first value); headers: lower-case name -> string; body_text: the raw
-- body or nil. Path and query parameters are deserialized as OpenAPI's defaults say (style simple and
-- form, one value): a string, turned into a number or a boolean where the schema's type says so.

local jsonschema = require("bb_jsonschema")

local M = {}

local tonumber, type, pairs, ipairs, lower, find = tonumber, type, pairs, ipairs, string.lower, string.find
local floor = math.floor

-- A parameter's text as the value its schema's type expects, or nil when it cannot be one.
local function deserialize(text, wanted)
  if wanted == "integer" then
    local n = tonumber(text)
    if n and find(text, "^-?%d+$") and floor(n) == n then return n end
    return nil
  elseif wanted == "number" then
    if find(text, "^%s") or find(text, "%s$") then return nil end
    return tonumber(text)
  elseif wanted == "boolean" then
    if text == "true" then return true elseif text == "false" then return false end
    return nil
  end
  return text
end

local function compile_parameter(p, options)
  local schema = p.schema or {}
  local check = jsonschema.compile(schema, options)
  local name, wanted, required = p.name, schema.type, p.required == true
  local where = p["in"]
  return function(value)
    if value == nil then
      if required then return false, where .. " parameter " .. name .. " is missing" end
      return true
    end
    if type(value) == "table" then value = value[1] end -- repeated: the first one
    if type(value) ~= "string" then
      return false, where .. " parameter " .. name .. " has no value"
    end
    local v = deserialize(value, wanted)
    if v == nil then return false, where .. " parameter " .. name .. ": not a " .. tostring(wanted) end
    local ok, why = check(v)
    if not ok then return false, where .. " parameter " .. name .. (why:gsub("^/", "")) end
    return true
  end
end

-- "/users/{userId}" -> a matcher returning {userId = "42"} for "/users/42"
local function compile_path(template)
  local names, pattern = {}, "^"
  for literal, name in (template .. "{}"):gmatch("([^{]*){([^}]*)}") do
    pattern = pattern .. literal:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
    if name ~= "" then
      names[#names + 1] = name
      pattern = pattern .. "([^/]+)"
    end
  end
  pattern = pattern .. "$"
  return function(path)
    local found = { find(path, pattern) }
    if found[1] == nil then return nil end
    local params = {}
    for i, name in ipairs(names) do params[name] = found[i + 2] end
    return params
  end
end

function M.compile(spec, options)
  options = options or {}
  local decode = options.decode
  if not decode then error("bb_openapi.compile needs options.decode (JSON text -> value)", 0) end
  local routes = {}
  for template, item in pairs(spec.paths or {}) do
    for _, method in ipairs({ "get", "put", "post", "delete", "patch", "head", "options" }) do
      local op = item[method]
      if op then
        local params = {}
        for _, list in ipairs({ item.parameters or {}, op.parameters or {} }) do
          for _, p in ipairs(list) do
            local key = p["in"] .. ":" .. (p["in"] == "header" and lower(p.name) or p.name)
            params[key] = p
          end
        end
        local path_checks, query_checks, header_checks = {}, {}, {}
        for _, p in pairs(params) do
          local entry = { p["in"] == "header" and lower(p.name) or p.name, compile_parameter(p, options) }
          if p["in"] == "path" then path_checks[#path_checks + 1] = entry
          elseif p["in"] == "query" then query_checks[#query_checks + 1] = entry
          elseif p["in"] == "header" then header_checks[#header_checks + 1] = entry
          end
        end
        local body_check, body_required = nil, false
        local rb = op.requestBody
        if rb and rb.content and rb.content["application/json"] then
          body_check = jsonschema.compile(rb.content["application/json"].schema or {}, options)
          body_required = rb.required == true
        end
        routes[#routes + 1] = { method = method:upper(), match = compile_path(template), path = path_checks,
                                query = query_checks, header = header_checks, body = body_check,
                                body_required = body_required }
      end
    end
  end

  local function run(checks, values)
    for i = 1, #checks do
      local c = checks[i]
      local ok, why = c[2](values[c[1]])
      if not ok then return false, why end
    end
    return true
  end

  return function(method, path, query, headers, body_text)
    for _, route in ipairs(routes) do
      if route.method == method then
        local params = route.match(path)
        if params then
          local ok, why = run(route.path, params)
          if not ok then return false, why end
          ok, why = run(route.query, query or {})
          if not ok then return false, why end
          ok, why = run(route.header, headers or {})
          if not ok then return false, why end
          if route.body then
            if body_text == nil or body_text == "" then
              if route.body_required then return false, "the request body is missing" end
              return true
            end
            local content_type = headers and headers["content-type"]
            if content_type and not find(lower(content_type), "^application/json") then
              return false, "the body is " .. content_type .. ", not application/json"
            end
            local decoded, value = pcall(decode, body_text)
            if not decoded or value == nil then return false, "the body is not JSON" end
            ok, why = route.body(value)
            if not ok then return false, "body" .. why end
          end
          return true
        end
      end
    end
    return false, "no operation for " .. method .. " " .. path
  end
end

return M
