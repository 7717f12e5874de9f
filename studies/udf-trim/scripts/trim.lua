-- The trim workload as a Talaria user writes it (the seed's Lua trim): the row arrives as JSON text,
-- key1..key5 are removed, and the rest goes back as JSON text. Runs on Lua 5.1, 5.4, LuaJIT and
-- gopher-lua, with any json module that has decode and encode.
local json = require("json")

local keys = { "key1", "key2", "key3", "key4", "key5" }

function main(input)
    local data = json.decode(input)
    for _, key in ipairs(keys) do
        data[key] = nil
    end
    return json.encode(data)
end
