//go:build wasip1

// Command guest is the wazero mechanism's plugin: the contract's functions in a WebAssembly reactor
// module (WASI preview 1), built by
//
//	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -buildmode=c-shared -o plugin.wasm ./wasm/guest
//
// The host calls _initialize once (the Go runtime starts; main never runs), then the exports:
//
//	int_fn(x i64) i64           contract.IntFunc
//	alloc(size i32) i32         the address of an input buffer of size bytes (kept until the next alloc)
//	bytes_fn(ptr, len i32) i64  contract.BytesFunc of the len bytes at ptr (which alloc returned);
//	                            the result's address<<32 | length, valid until the next call
//
// The result is written into an output buffer the guest reuses, so a call allocates only when the
// payload outgrows it. An instance is single-threaded.
package main

import (
	"unsafe"

	"bridgebench/plugincall/contract"
)

func main() {}

var input, output []byte

//go:wasmexport int_fn
func intFn(x int64) int64 { return contract.IntFunc(x) }

//go:wasmexport alloc
func alloc(size uint32) uint32 {
	if input == nil || uint32(cap(input)) < size {
		input = make([]byte, max(size, 64))
	}
	input = input[:size]
	return addr(input)
}

//go:wasmexport bytes_fn
func bytesFn(ptr, length uint32) uint64 {
	if input == nil || ptr != addr(input) || length > uint32(len(input)) {
		return 1 << 63 // not an address<<32 | length a module of 4 GiB at most returns: the host's error
	}
	in := input[:length]
	if uint32(cap(output)) < length || output == nil {
		output = make([]byte, max(length, 64))
	}
	out := output[:length]
	for i, b := range in {
		out[len(in)-1-i] = b ^ 0x5a
	}
	return uint64(addr(output))<<32 | uint64(length)
}

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
