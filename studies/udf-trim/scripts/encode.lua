-- The encode workload (the seed's JSON data column, `return json.encode(row)`): the row arrives as
-- JSON text, so it is decoded to a table and encoded again.
local json = require("json")

function main(input)
    local row = json.decode(input)
    return json.encode(row)
end
