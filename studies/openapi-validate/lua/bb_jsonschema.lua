-- A JSON Schema (draft 4) compiler: a schema becomes a tree of Lua closures once, and validating a value
-- runs only those closures (no schema walking, no keyword lookups per request). Runs unchanged on Lua 5.1,
-- 5.4 and LuaJIT.
--
--   local jsonschema = require("bb_jsonschema")
--   local validate = jsonschema.compile(schema, options)
--   local ok, why = validate(value)
--
-- Decoded JSON is plain Lua: strings, numbers, booleans, tables for arrays and objects, and options.null
-- for JSON null. Whether a table is an array comes from options.array_mt / options.object_mt (metatables
-- a decoder sets); a table with neither is an array when t[1] is not nil, an object when it has another
-- key, and *either* when it is empty: a decoder such as Debian's lua-cjson gives {} for both [] and {}, so
-- an empty table passes "type": "array" and "type": "object" alike (the one thing such a decoder costs).
--
-- options:
--   null            the value JSON null decodes to (default: a private sentinel, so no value is null)
--   array_mt, object_mt   metatables marking arrays and objects (optional)
--   regex           function(pattern) -> function(subject) -> boolean (needed by pattern and
--                   patternProperties; ECMA 262 regexes, matched anywhere in the subject)
--   remote          function(uri) -> schema table or nil: documents $ref names outside this schema
--   base            the base URI of the root schema (default: its id, else "")

local M = {}

local type, pairs, ipairs, next, tostring, getmetatable = type, pairs, ipairs, next, tostring, getmetatable
local floor, huge, abs = math.floor, math.huge, math.abs
local byte, find, sub, gsub, format = string.byte, string.find, string.sub, string.gsub, string.format
local concat = table.concat

-- --- URIs (RFC 3986, as far as $ref and id need) ----------------------------------------------------
local function split_fragment(uri)
  local hash = find(uri, "#", 1, true)
  if not hash then return uri, nil end
  return sub(uri, 1, hash - 1), sub(uri, hash + 1)
end

local function remove_dots(path)
  local out = {}
  for segment in (path .. "/"):gmatch("([^/]*)/") do
    if segment == ".." then
      if #out > 1 then out[#out] = nil end
    elseif segment ~= "." then
      out[#out + 1] = segment
    end
  end
  local last = path:match("([^/]*)$")
  if last == "." or last == ".." then out[#out + 1] = "" end
  return concat(out, "/")
end

local function resolve(base, ref)
  if ref == nil or ref == "" then return base end
  if find(ref, "^[%a][%w+.-]*:") then return ref end
  local base_doc = split_fragment(base)
  if sub(ref, 1, 1) == "#" then return base_doc .. ref end
  local scheme, rest = base_doc:match("^([%a][%w+.-]*:)(.*)$")
  scheme, rest = scheme or "", rest or base_doc
  if sub(ref, 1, 2) == "//" then return scheme .. ref end
  local authority, path = rest:match("^(//[^/]*)(.*)$")
  authority, path = authority or "", path or rest
  local ref_path, fragment = split_fragment(ref)
  local query = ""
  local q = find(ref_path, "?", 1, true)
  if q then ref_path, query = sub(ref_path, 1, q - 1), sub(ref_path, q) end
  if sub(ref_path, 1, 1) == "/" then
    path = remove_dots(ref_path)
  else
    path = remove_dots((path:match("^(.*/)") or (authority ~= "" and "/" or "")) .. ref_path)
  end
  return scheme .. authority .. path .. query .. (fragment and ("#" .. fragment) or "")
end
M.resolve = resolve

local function unescape_pointer(token)
  token = gsub(token, "%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
  return (gsub(gsub(token, "~1", "/"), "~0", "~"))
end

-- --- values -----------------------------------------------------------------------------------------
local function is_integer(v)
  return v == v and v ~= huge and v ~= -huge and floor(v) == v
end

local function utf8_length(s)
  local _, continuation = gsub(s, "[\128-\191]", "")
  return #s - continuation
end

-- --- the compiler -----------------------------------------------------------------------------------
function M.compile(root, options)
  options = options or {}
  local null = options.null == nil and {} or options.null
  local array_mt, object_mt = options.array_mt, options.object_mt
  local make_regex, remote = options.regex, options.remote

  -- "array", "object", or "empty" (a bare empty table: either)
  local function shape(t)
    local mt = getmetatable(t)
    if mt ~= nil then
      if mt == array_mt then return "array" end
      if mt == object_mt then return "object" end
    end
    if t[1] ~= nil then return "array" end
    if next(t) == nil then return "empty" end
    return "object"
  end

  local function kind(v)
    local t = type(v)
    if v == null then return "null" end
    if t == "table" then return shape(v) end
    if t == "number" then return is_integer(v) and "integer" or "number" end
    return t -- string, boolean
  end

  local function length(t)
    return #t
  end

  local equal
  equal = function(a, b)
    if a == b then return true end
    local ta, tb = type(a), type(b)
    if ta ~= "table" or tb ~= "table" or a == null or b == null then return false end
    local sa, sb = shape(a), shape(b)
    if sa ~= sb and sa ~= "empty" and sb ~= "empty" then return false end
    if sa == "array" or sb == "array" then
      if length(a) ~= length(b) then return false end
      for i = 1, length(a) do
        if not equal(a[i], b[i]) then return false end
      end
      return true
    end
    for k, v in pairs(a) do
      if not equal(v, b[k]) then return false end
    end
    for k in pairs(b) do
      if a[k] == nil then return false end
    end
    return true
  end
  M.equal = equal

  -- Every schema document by its absolute URI (no fragment), and every subschema with an id by its id
  -- (location-independent "#name" ids included).
  local documents = {}
  local walked = {}

  local function walk(schema, base)
    if type(schema) ~= "table" or walked[schema] then return end
    walked[schema] = true
    if type(schema.id) == "string" and schema["$ref"] == nil then -- draft 4: $ref hides its siblings
      base = resolve(base, schema.id)
      local doc, fragment = split_fragment(base)
      if fragment == nil or fragment == "" then
        documents[doc] = documents[doc] or schema
      else
        documents[base] = schema
      end
    end
    local function each(map)
      if type(map) == "table" then
        for _, sub_schema in pairs(map) do walk(sub_schema, base) end
      end
    end
    each(schema.properties)
    each(schema.patternProperties)
    each(schema.definitions)
    if type(schema.dependencies) == "table" then
      for _, d in pairs(schema.dependencies) do
        if type(d) == "table" and shape(d) ~= "array" then walk(d, base) end
      end
    end
    if type(schema.items) == "table" then
      if shape(schema.items) == "array" then each(schema.items) else walk(schema.items, base) end
    end
    walk(schema.additionalItems, base)
    walk(schema.additionalProperties, base)
    each(schema.allOf)
    each(schema.anyOf)
    each(schema.oneOf)
    walk(schema["not"], base)
  end

  local root_base = options.base or ""
  if type(root.id) == "string" then root_base = resolve(root_base, root.id) end
  documents[split_fragment(root_base)] = root
  walk(root, options.base or "")

  -- The schema a URI names, and the base URI in force there.
  local function find_schema(uri)
    if documents[uri] then return documents[uri], uri end
    local doc_uri, fragment = split_fragment(uri)
    local doc = documents[doc_uri]
    if doc == nil and remote then
      doc = remote(doc_uri)
      if doc ~= nil then
        documents[doc_uri] = doc
        walk(doc, doc_uri)
      end
      if documents[uri] then return documents[uri], uri end
    end
    if doc == nil then return nil end
    if fragment == nil or fragment == "" then return doc, doc_uri end
    if sub(fragment, 1, 1) ~= "/" then return nil end
    local node, base = doc, doc_uri
    for token in (sub(fragment, 2) .. "/"):gmatch("([^/]*)/") do
      token = unescape_pointer(token)
      if type(node) ~= "table" then return nil end
      if shape(node) == "array" then
        node = node[(tonumber(token) or -1) + 1]
      else
        node = node[token]
      end
      if type(node) == "table" and type(node.id) == "string" and node["$ref"] == nil then
        base = resolve(base, node.id)
      end
    end
    return node, base
  end

  local compiled = {} -- [schema][base] -> function

  local compile_schema

  local function fail(path, message)
    return false, (path == "" and "/" or path) .. ": " .. message
  end

  local function compile_ref(schema, base)
    local uri = resolve(base, schema["$ref"])
    local target, target_base = find_schema(uri)
    if target == nil then error("cannot resolve $ref " .. uri, 0) end
    return compile_schema(target, target_base)
  end

  local function type_check(types)
    local wanted = {}
    for _, t in ipairs(type(types) == "table" and types or { types }) do wanted[t] = true end
    local any_number = wanted.number
    return function(v, path)
      local k = kind(v)
      if wanted[k] or (k == "integer" and any_number) or (k == "empty" and (wanted.array or wanted.object)) then
        return true
      end
      return fail(path, "expected type " .. (type(types) == "table" and concat(types, " or ") or types) ..
        ", got " .. (k == "empty" and "an empty container" or k))
    end
  end

  -- Each keyword compiles to a check(value, path) -> true | false, why; the schema's checks run in order.
  -- `base`: the base URI in force at the schema (its own id applied)
  compile_schema = function(schema, base)
    if type(schema) ~= "table" then error("a schema must be an object, got " .. type(schema), 0) end
    local by_base = compiled[schema]
    if by_base == nil then
      by_base = {}
      compiled[schema] = by_base
    end
    if by_base[base] then return by_base[base] end
    local function child(sub_schema)
      if type(sub_schema) == "table" and type(sub_schema.id) == "string" and sub_schema["$ref"] == nil then
        return compile_schema(sub_schema, resolve(base, sub_schema.id))
      end
      return compile_schema(sub_schema, base)
    end
    -- A stub first, so that recursive references reach the finished function.
    local final
    by_base[base] = function(v, path) return final(v, path) end

    if schema["$ref"] ~= nil then
      final = compile_ref(schema, base)
      by_base[base] = final
      return final
    end

    local checks = {}
    local function add(check) checks[#checks + 1] = check end

    if schema.type ~= nil then add(type_check(schema.type)) end

    if schema.enum ~= nil then
      local values = schema.enum
      add(function(v, path)
        for i = 1, #values do
          if equal(values[i], v) then return true end
        end
        return fail(path, "not one of the enum's values")
      end)
    end

    -- numbers
    local m = schema.multipleOf
    if m ~= nil then
      add(function(v, path)
        if type(v) ~= "number" then return true end
        local q = v / m
        if q == huge or q == -huge then return fail(path, "not a multiple of " .. tostring(m)) end
        if abs(q - floor(q + 0.5)) <= 1e-9 * math.max(1, abs(q)) then return true end
        return fail(path, "not a multiple of " .. tostring(m))
      end)
    end
    if schema.maximum ~= nil then
      local max, exclusive = schema.maximum, schema.exclusiveMaximum == true
      add(function(v, path)
        if type(v) ~= "number" then return true end
        if v < max or (v == max and not exclusive) then return true end
        return fail(path, format("%s is above the maximum %s", tostring(v), tostring(max)))
      end)
    end
    if schema.minimum ~= nil then
      local min, exclusive = schema.minimum, schema.exclusiveMinimum == true
      add(function(v, path)
        if type(v) ~= "number" then return true end
        if v > min or (v == min and not exclusive) then return true end
        return fail(path, format("%s is below the minimum %s", tostring(v), tostring(min)))
      end)
    end

    -- strings
    if schema.maxLength ~= nil then
      local max = schema.maxLength
      add(function(v, path)
        if type(v) ~= "string" or #v <= max or utf8_length(v) <= max then return true end
        return fail(path, "longer than " .. max .. " characters")
      end)
    end
    if schema.minLength ~= nil then
      local min = schema.minLength
      add(function(v, path)
        if type(v) ~= "string" or utf8_length(v) >= min then return true end
        return fail(path, "shorter than " .. min .. " characters")
      end)
    end
    if schema.pattern ~= nil then
      if not make_regex then error("pattern needs options.regex", 0) end
      local pattern = schema.pattern
      local matches = make_regex(pattern)
      add(function(v, path)
        if type(v) ~= "string" or matches(v) then return true end
        return fail(path, "does not match " .. pattern)
      end)
    end

    -- arrays
    local items = schema.items
    if items ~= nil then
      if type(items) == "table" and shape(items) == "array" then
        local each = {}
        for i = 1, #items do each[i] = child(items[i]) end
        local additional = schema.additionalItems
        local extra = type(additional) == "table" and child(additional) or nil
        add(function(v, path)
          if type(v) ~= "table" or v == null or shape(v) == "object" then return true end
          local n = length(v)
          for i = 1, n do
            local check = each[i]
            if check == nil then
              if additional == false then return fail(path, "more than " .. #each .. " items") end
              if extra == nil then break end
              check = extra
            end
            local ok, why = check(v[i], path .. "/" .. (i - 1))
            if not ok then return ok, why end
          end
          return true
        end)
      else
        local each = child(items)
        add(function(v, path)
          if type(v) ~= "table" or v == null or shape(v) == "object" then return true end
          for i = 1, length(v) do
            local ok, why = each(v[i], path .. "/" .. (i - 1))
            if not ok then return ok, why end
          end
          return true
        end)
      end
    end
    if schema.maxItems ~= nil then
      local max = schema.maxItems
      add(function(v, path)
        if type(v) ~= "table" or v == null or shape(v) == "object" or length(v) <= max then return true end
        return fail(path, "more than " .. max .. " items")
      end)
    end
    if schema.minItems ~= nil then
      local min = schema.minItems
      add(function(v, path)
        if type(v) ~= "table" or v == null or shape(v) == "object" or length(v) >= min then return true end
        return fail(path, "fewer than " .. min .. " items")
      end)
    end
    if schema.uniqueItems == true then
      add(function(v, path)
        if type(v) ~= "table" or v == null or shape(v) == "object" then return true end
        local n = length(v)
        for i = 1, n - 1 do
          for j = i + 1, n do
            if equal(v[i], v[j]) then return fail(path, format("items %d and %d are equal", i - 1, j - 1)) end
          end
        end
        return true
      end)
    end

    -- objects
    local function is_object(v)
      return type(v) == "table" and v ~= null and shape(v) ~= "array"
    end
    if schema.maxProperties ~= nil then
      local max = schema.maxProperties
      add(function(v, path)
        if not is_object(v) then return true end
        local n = 0
        for _ in pairs(v) do n = n + 1 end
        if n <= max then return true end
        return fail(path, "more than " .. max .. " properties")
      end)
    end
    if schema.minProperties ~= nil then
      local min = schema.minProperties
      add(function(v, path)
        if not is_object(v) then return true end
        local n = 0
        for _ in pairs(v) do
          n = n + 1
          if n >= min then return true end
        end
        if n >= min then return true end
        return fail(path, "fewer than " .. min .. " properties")
      end)
    end
    if schema.required ~= nil then
      local names = schema.required
      add(function(v, path)
        if not is_object(v) then return true end
        for i = 1, #names do
          if v[names[i]] == nil then return fail(path, "missing required property " .. names[i]) end
        end
        return true
      end)
    end
    local properties, patterns = schema.properties, schema.patternProperties
    local additional = schema.additionalProperties
    if properties ~= nil or patterns ~= nil or additional ~= nil then
      local by_name, names = {}, {}
      for name, sub_schema in pairs(properties or {}) do
        by_name[name] = child(sub_schema)
        names[#names + 1] = name
      end
      local pattern_checks = {}
      for pattern, sub_schema in pairs(patterns or {}) do
        if not make_regex then error("patternProperties needs options.regex", 0) end
        pattern_checks[#pattern_checks + 1] = { make_regex(pattern), child(sub_schema) }
      end
      local extra = type(additional) == "table" and child(additional) or nil
      local closed = additional == false
      if #pattern_checks == 0 and extra == nil and not closed then
        -- only `properties`: look each one up instead of walking the value's keys
        add(function(v, path)
          if not is_object(v) then return true end
          for i = 1, #names do
            local name = names[i]
            local value = v[name]
            if value ~= nil then
              local ok, why = by_name[name](value, path .. "/" .. name)
              if not ok then return ok, why end
            end
          end
          return true
        end)
      else
        add(function(v, path)
          if not is_object(v) then return true end
          for key, value in pairs(v) do
            local name = tostring(key)
            local here = path .. "/" .. name
            local known = false
            local check = by_name[name]
            if check ~= nil then
              known = true
              local ok, why = check(value, here)
              if not ok then return ok, why end
            end
            for i = 1, #pattern_checks do
              local pc = pattern_checks[i]
              if pc[1](name) then
                known = true
                local ok, why = pc[2](value, here)
                if not ok then return ok, why end
              end
            end
            if not known then
              if closed then return fail(path, "property " .. name .. " is not allowed") end
              if extra ~= nil then
                local ok, why = extra(value, here)
                if not ok then return ok, why end
              end
            end
          end
          return true
        end)
      end
    end
    if schema.dependencies ~= nil then
      local deps = {}
      for name, d in pairs(schema.dependencies) do
        if type(d) == "table" and shape(d) ~= "object" then
          deps[#deps + 1] = { name, d, nil }
        else
          deps[#deps + 1] = { name, nil, child(d) }
        end
      end
      add(function(v, path)
        if not is_object(v) then return true end
        for i = 1, #deps do
          local d = deps[i]
          if v[d[1]] ~= nil then
            if d[2] then
              for j = 1, #d[2] do
                if v[d[2][j]] == nil then
                  return fail(path, d[1] .. " needs property " .. d[2][j])
                end
              end
            else
              local ok, why = d[3](v, path)
              if not ok then return ok, why end
            end
          end
        end
        return true
      end)
    end

    -- combinations
    local function compile_all(list)
      local out = {}
      for i = 1, #list do out[i] = child(list[i]) end
      return out
    end
    if schema.allOf ~= nil then
      local all = compile_all(schema.allOf)
      add(function(v, path)
        for i = 1, #all do
          local ok, why = all[i](v, path)
          if not ok then return ok, why end
        end
        return true
      end)
    end
    if schema.anyOf ~= nil then
      local any = compile_all(schema.anyOf)
      add(function(v, path)
        for i = 1, #any do
          if any[i](v, path) then return true end
        end
        return fail(path, "matches none of anyOf")
      end)
    end
    if schema.oneOf ~= nil then
      local one = compile_all(schema.oneOf)
      add(function(v, path)
        local matched = 0
        for i = 1, #one do
          if one[i](v, path) then matched = matched + 1 end
        end
        if matched == 1 then return true end
        return fail(path, "matches " .. matched .. " of oneOf, not exactly one")
      end)
    end
    if schema["not"] ~= nil then
      local negated = child(schema["not"])
      add(function(v, path)
        if negated(v, path) then return fail(path, "matches the schema under not") end
        return true
      end)
    end

    local n = #checks
    if n == 0 then
      final = function() return true end
    elseif n == 1 then
      final = checks[1]
    else
      final = function(v, path)
        for i = 1, n do
          local ok, why = checks[i](v, path)
          if not ok then return ok, why end
        end
        return true
      end
    end
    by_base[base] = final
    return final
  end

  local check = compile_schema(root, root_base)
  return function(value)
    return check(value, "")
  end
end

return M
