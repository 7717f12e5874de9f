//go:build lua54

package lua54

import (
	"bridgebench/udftrim/loaders/luavm"
	"bridgebench/udftrim/udf"
)

// Mechanism names.
const (
	NameJSON  = "lua54-json"
	NameTable = "lua54-table"
)

func init() {
	udf.Register(NameJSON, func() udf.Handler { return luavm.New(luavm.JSON) })
	udf.Register(NameTable, func() udf.Handler { return luavm.New(luavm.Table) })
}
