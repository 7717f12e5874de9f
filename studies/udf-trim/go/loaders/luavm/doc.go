// Package luavm runs Lua user scripts on a C Lua VM through cgo: LuaJIT (build tag luajit) or Lua 5.4
// (build tag lua54). The two export the same C symbols, so a binary links one of them, chosen by its
// tag; without either tag this package is empty. The loaders ../luajit and ../lua54 register its
// handlers under their names.
//
// Two crossings of the row into Lua, two mechanisms per VM:
//
//	<vm>-json   the row crosses as JSON text: Go encodes it (udf.Marshal's encoding), the script's
//	            main(input) decodes it with lua-cjson, computes and returns JSON text (Talaria's shape:
//	            the study's scripts/trim.lua and encode.lua);
//	<vm>-table  the row crosses as a Lua table: Go flattens the map into a compact tagged byte
//	            string in one pass, and one C function builds the nested tables from it through the C
//	            API (lua_createtable, lua_pushlstring, lua_rawset…), so the whole row costs one cgo
//	            call rather than one per value; the script's main_table(row) computes and returns JSON
//	            text (../luascripts/*_table.lua). JSON null crosses as cjson.null.
//
// Both return the result string copied out of the Lua state (lua_tolstring, so NUL bytes are kept).
// The crossing matters: the package benchmarks (go test -tags luajit -bench . ./loaders/luajit, and
// lua54) on a 2-vCPU development VM gave, per call, trim/small 7.7 µs as JSON vs 2.8 µs as a table on
// LuaJIT (8.5 vs 3.8 on Lua 5.4), trim/large 610 vs 305 µs (711 vs 322), the JSON crossing also
// allocating 30–1,900 times per call in Go (encoding/json) against 2 for the table.
//
// A handler keeps a pool of lua_State, each with lua-cjson preloaded as "json" (package.cpath points at
// Debian's lua-cjson for the VM) and the script run once; Value takes a state, calls, and puts it back.
// The pool grows up to UDF_LUA_POOL states (default GOMAXPROCS) as concurrent calls need them.
//
// Every entry into Lua is a lua_pcall made in C with a message handler, so a Lua error becomes a Go error
// with the message and a traceback, and never unwinds through Go frames.
//
// Deadline: UDF_TIMEOUT_MS (default 100; 0: none) per call, and for running the script's chunk at Load.
// A count hook checks the clock every HookCount VM instructions and raises an error past the deadline;
// Value returns an error wrapping ErrTimeout, and the state is closed and replaced. LuaJIT never calls
// hooks from JIT-compiled code (tested: a compiled `while true do end` ignores the hook), so with a
// deadline the LuaJIT loaders turn the JIT compiler off (luaJIT_setmode … LUAJIT_MODE_OFF, and jit.on
// refuses), leaving LuaJIT's interpreter, which does call hooks. With UDF_TIMEOUT_MS=0 there is no
// hook and the JIT is on. UDF_LUAJIT_JIT=on keeps the JIT on with a deadline: then a loop that gets
// compiled cannot be stopped, and the call never returns (its goroutine and thread are lost). For these
// workloads the JIT barely matters (the time goes to lua-cjson and to building tables, which is C): the
// benchmarks with and without a deadline differ by no more than their noise.
package luavm
