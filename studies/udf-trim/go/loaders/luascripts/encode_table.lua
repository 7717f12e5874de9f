-- Encode for the table crossing (mechanisms luajit-table, lua54-table): the row arrives as a Lua
-- table built through the C API, and the column is the row as JSON text.
local json = require("json")

function main_table(row)
	return json.encode(row)
end
