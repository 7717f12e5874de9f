//go:build wasip1

// Command extismplugin is the WebAssembly plugin of the "extism" mechanism, written against the Extism
// Go PDK and built by the standard Go compiler as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o contract.wasm ./servers/extismplugin
//
// It exports two functions; each reads the call's input from Extism's memory and writes its output:
// int_func (8 bytes little-endian in and out: contract.IntFunc) and bytes_func (contract.BytesFunc).
package main

import (
	"encoding/binary"
	"fmt"

	"bridgebench/plugincall/contract"

	"github.com/extism/go-pdk"
)

//go:wasmexport int_func
func intFunc() int32 {
	in := pdk.Input()
	if len(in) != 8 {
		pdk.SetErrorString(fmt.Sprintf("int_func wants 8 bytes, got %d", len(in)))
		return 1
	}
	y := contract.IntFunc(int64(binary.LittleEndian.Uint64(in)))
	pdk.Output(binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(y)))
	return 0
}

//go:wasmexport bytes_func
func bytesFunc() int32 {
	pdk.Output(contract.BytesFunc(pdk.Input()))
	return 0
}

func main() {}
