//go:build luajit && lua54

package luavm

// LuaJIT and Lua 5.4 export the same C symbols (lua_pushstring, …), so one binary can link only one of
// them: build with -tags luajit or with -tags lua54, not both.
var _ = build_with_either_luajit_or_lua54_not_both
