// Command cshared is the contract as a C shared library (go build -buildmode=c-shared), for hosts that
// reach Go through the C ABI: the plugin-call study calls it from LuaJIT's FFI (../../lua/ffi.lua).
package main

/*
#include <stddef.h>
*/
import "C"

import (
	"unsafe"

	"bridgebench/plugincall/contract"
)

// ContractInt is contract.IntFunc.
//
//export ContractInt
func ContractInt(x C.longlong) C.longlong { return C.longlong(contract.IntFunc(int64(x))) }

// ContractBytes writes contract.BytesFunc(in[:n]) into out, which the caller owns (n bytes): nothing is
// allocated or copied on the Go side, and no Go pointer leaves Go.
//
//export ContractBytes
func ContractBytes(in *C.char, n C.int, out *C.char) {
	if n <= 0 {
		return
	}
	src := unsafe.Slice((*byte)(unsafe.Pointer(in)), int(n))
	dst := unsafe.Slice((*byte)(unsafe.Pointer(out)), int(n))
	contract.BytesInto(dst, src)
}

func main() {}
