// This file is not named register_wasm.go: a _wasm suffix would restrict it to GOARCH=wasm.

package main

// The wasm mechanism (wazero, no cgo): it loads the module UDF_WASM names, built from ./wasm/guest with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o udf.wasm ./wasm/guest
//
// and calls the export named after the workload (trim, encode).
import (
	"fmt"

	_ "bridgebench/udftrim/loaders/wasm"
)

func init() { sources["wasm"] = wasmExport }

func wasmExport(env func(string) string, workload string) (string, error) {
	module := env("UDF_WASM")
	if module == "" {
		return "", fmt.Errorf("UDF_WASM is not set (the .wasm built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared ./wasm/guest)")
	}
	return module + "#" + workload, nil
}
