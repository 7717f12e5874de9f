// Package luajit registers the LuaJIT mechanisms, luajit-json and luajit-table, when built with -tags
// luajit (without the tag it is empty): Lua user scripts run on LuaJIT (Debian's libluajit-5.1)
// through cgo, the row crossing as JSON text or as a Lua table. See ../luavm for how the row crosses,
// the state pool, errors and the deadline (with a deadline the JIT compiler is off, because LuaJIT
// never calls hooks from compiled code).
//
// Not together with -tags lua54: both VMs export the same C symbols.
package luajit
