// Package luascripts holds the Lua scripts of the table crossing (luajit-table, lua54-table): the row
// arrives as a Lua table and the script's entry point is main_table(row). The JSON crossing uses the
// study's shared scripts (studies/udf-trim/scripts/<workload>.lua, entry point main(input)).
package luascripts

import (
	"embed"
	"fmt"
)

//go:embed *.lua
var files embed.FS

// Table returns the source of the table-crossing script of a workload ("trim" or "encode").
func Table(workload string) (string, error) {
	text, err := files.ReadFile(workload + "_table.lua")
	if err != nil {
		return "", fmt.Errorf("no table-crossing Lua script for workload %q (want trim or encode)", workload)
	}
	return string(text), nil
}

// Source has the shape of udfbench's Source: the uriOrCode that a *-table mechanism loads for a
// workload. It is the script's text (which has newlines), so no file need be found at run time.
func Source(_ func(string) string, workload string) (string, error) { return Table(workload) }
