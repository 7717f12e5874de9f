// Command udf is the user code of the "plugin" mechanism, built as a Go plugin:
//
//	go build -buildmode=plugin -o udf.so ./plugins/udf
//
// It exports Trim and Encode, func(map[string]any) (any, error), which the plugin loader looks up by
// name ("udf.so#Trim"). They call the same Go functions as the native mechanism, so that native vs
// plugin compares the call mechanism and nothing else.
//
// Sharing the host's package bridgebench/udftrim/udf is how a Talaria user shares types with the
// server. The price is the one the seed names: the plugin must be built by the same Go toolchain, from
// the same module source and with the same build flags as the program that opens it, or plugin.Open
// fails ("plugin was built with a different version of package ...").
package main

import "bridgebench/udftrim/udf"

// Trim removes key1…key5 from the row and returns the rest as JSON text.
func Trim(row map[string]any) (any, error) { return udf.Trim(row) }

// Encode returns the row as JSON text.
func Encode(row map[string]any) (any, error) { return udf.Encode(row) }

// main is never called: a plugin's main package needs none, but without it `go build ./...` fails.
func main() {}
