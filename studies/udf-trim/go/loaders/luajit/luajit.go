//go:build luajit

package luajit

import (
	"bridgebench/udftrim/loaders/luavm"
	"bridgebench/udftrim/udf"
)

// Mechanism names.
const (
	NameJSON  = "luajit-json"
	NameTable = "luajit-table"
)

func init() {
	udf.Register(NameJSON, func() udf.Handler { return luavm.New(luavm.JSON) })
	udf.Register(NameTable, func() udf.Handler { return luavm.New(luavm.Table) })
}
