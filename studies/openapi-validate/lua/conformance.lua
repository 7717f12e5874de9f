-- The JSON-Schema-Test-Suite against bb_jsonschema: every test of the given files, remote references
-- answered from the suite's own remotes folder (as http://localhost:1234/...) and the draft 4 metaschema
-- from a local file; nothing from the network.
--
--   luajit conformance.lua SUITE_TESTS_DIR REMOTES_DIR METASCHEMA FILE.json...
--
-- Prints one line per failed test, then one JSON object: {"files": {"type.json": [passed, total], ...},
-- "passed": P, "total": N}. Needs rex_pcre2 (Debian's lua-rex-pcre2) for pattern keywords.

local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path

local json = require("bb_json")
local jsonschema = require("bb_jsonschema")
local rex = require("rex_pcre2")

local tests_dir, remotes_dir, metaschema_path = arg[1], arg[2], arg[3]
if not metaschema_path or not arg[4] then
  io.stderr:write("usage: conformance.lua SUITE_TESTS_DIR REMOTES_DIR METASCHEMA FILE.json...\n")
  os.exit(2)
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  return text
end

local UTF = rex.flags().UTF  -- (not UCP: ECMA 262 keeps \d and \w ASCII)
local regex_cache = {}
local function regex(pattern)
  local compiled = regex_cache[pattern]
  if not compiled then
    compiled = rex.new(pattern, UTF)
    regex_cache[pattern] = compiled
  end
  return function(subject) return compiled:find(subject) ~= nil end
end

local METASCHEMA = "http://json-schema.org/draft-04/schema"
local function remote(uri)
  local text
  if uri == METASCHEMA then
    text = read(metaschema_path)
  else
    local path = uri:match("^http://localhost:1234/(.*)$")
    text = path and read(remotes_dir .. "/" .. path)
  end
  return text and json.decode(text) or nil
end

local options = { null = json.null, array_mt = json.array_mt, object_mt = json.object_mt, regex = regex,
                  remote = remote }

local files, passed, total = {}, 0, 0
for i = 4, #arg do
  local name = arg[i]
  local text = read(tests_dir .. "/" .. name)
  if not text then
    io.stderr:write("no such suite file: " .. tests_dir .. "/" .. name .. "\n")
    os.exit(2)
  end
  local ok_file, n_file = 0, 0
  for _, group in ipairs(json.decode(text)) do
    local compiled, validate = pcall(jsonschema.compile, group.schema, options)
    for _, test in ipairs(group.tests) do
      n_file = n_file + 1
      local verdict, why
      if compiled then
        local ran, ok, reason = pcall(validate, test.data)
        if ran then verdict, why = ok == true, reason else verdict, why = nil, "error: " .. tostring(ok) end
      else
        why = "compile error: " .. tostring(validate)
      end
      if verdict == test.valid then
        ok_file = ok_file + 1
      else
        print(string.format("FAIL %s | %s | %s: expected %s (%s)", name, group.description, test.description,
          tostring(test.valid), tostring(why)))
      end
    end
  end
  files[#files + 1] = string.format('"%s": [%d, %d]', name, ok_file, n_file)
  passed, total = passed + ok_file, total + n_file
end
print(string.format('{"files": {%s}, "passed": %d, "total": %d}', table.concat(files, ", "), passed, total))
