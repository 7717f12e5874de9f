// Command goplugin is the goplugin mechanism's plugin, built by the toolchain that builds callbench:
//
//	go build -buildmode=plugin -o goplugin.so ./plugins/goplugin
//
// It exports the contract's two functions as the symbols Int and Bytes.
package main

import "bridgebench/plugincall/contract"

// Int is contract.IntFunc.
func Int(x int64) int64 { return contract.IntFunc(x) }

// Bytes is contract.BytesFunc.
func Bytes(in []byte) []byte { return contract.BytesFunc(in) }

func main() {}
