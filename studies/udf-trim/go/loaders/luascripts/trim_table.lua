-- Trim for the table crossing (mechanisms luajit-table, lua54-table): the loader builds the row as a
-- Lua table through the C API and calls main_table(row); JSON nulls arrive as json.null. The same
-- work as ../../../scripts/trim.lua minus the json.decode.
local json = require("json")

local keys = { "key1", "key2", "key3", "key4", "key5" }

function main_table(row)
	for _, key in ipairs(keys) do
		row[key] = nil
	end
	return json.encode(row)
end
