// Package lua54 registers the Lua 5.4 mechanisms, lua54-json and lua54-table, when built with -tags
// lua54 (without the tag it is empty): Lua user scripts run on Lua 5.4 (Debian's liblua5.4) through
// cgo, the row crossing as JSON text or as a Lua table. See ../luavm for how the row crosses, the state
// pool, errors and the deadline (a count hook).
//
// Not together with -tags luajit: both VMs export the same C symbols.
package lua54
