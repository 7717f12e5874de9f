//go:build luajit

package main

// The LuaJIT mechanisms (cgo; Debian's libluajit-5.1-dev and lua-cjson): luajit-json loads the study's
// scripts/<workload>.lua like the other Lua mechanisms; luajit-table loads its own table-crossing
// script, embedded in the binary.
import (
	_ "bridgebench/udftrim/loaders/luajit"
	"bridgebench/udftrim/loaders/luascripts"
)

func init() { sources["luajit-table"] = luascripts.Source }
