//go:build lua54

package main

// The Lua 5.4 mechanisms (cgo; Debian's liblua5.4-dev and lua-cjson): lua54-json loads the study's
// scripts/<workload>.lua like the other Lua mechanisms; lua54-table loads its own table-crossing
// script, embedded in the binary.
import (
	_ "bridgebench/udftrim/loaders/lua54"
	"bridgebench/udftrim/loaders/luascripts"
)

func init() { sources["lua54-table"] = luascripts.Source }
