//go:build wasip1

// Command guest is the wasm mechanism's user code: the study's workloads compiled to a WebAssembly
// reactor module (WASI preview 1) that a host calls once per row:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o udf.wasm ./wasm/guest
//
// -buildmode=c-shared makes a reactor: the module exports _initialize (the host calls it once, it runs
// the Go runtime's and the packages' initialisation; main is never called) and the //go:wasmexport
// functions below.
//
// The row crosses as JSON text through the module's linear memory: the host asks alloc for a buffer of
// the row's length, writes the text there, and calls a workload with the buffer's address and length.
// The workload decodes the text with encoding/json into a map (the values udf.MakeRow's rows hold),
// computes with the same Go function as the native mechanism (udf.Trim, udf.Encode), and returns its
// result's address and length packed in one uint64: address<<32 | length. Bit 31 of the length marks a
// failure, the text then being the error message. The result stays valid until the next call.
//
// An instance is single-threaded: a host must not call it from two goroutines at once.
package main

import (
	"encoding/json"
	"unsafe"

	"bridgebench/udftrim/udf"
)

func main() {}

var (
	input  []byte // the host writes the row here (alloc)
	output []byte // the last result, kept alive until the next call
)

// failed is the bit of a packed result's length that marks an error message.
const failed = 1 << 31

//go:wasmexport alloc
func alloc(size uint32) uint32 {
	if uint32(cap(input)) < size || input == nil {
		input = make([]byte, max(size, 64))
	}
	input = input[:size]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

//go:wasmexport trim
func trim(ptr, length uint32) uint64 { return run(udf.Trim, ptr, length) }

//go:wasmexport encode
func encode(ptr, length uint32) uint64 { return run(udf.Encode, ptr, length) }

// spin never returns: the host's tests use it to check the deadline.
//
//go:wasmexport spin
func spin(ptr, length uint32) uint64 {
	n := uint64(ptr)
	for n != uint64(length)+1<<40 {
		n = n*6364136223846793005 + 1442695040888963407
	}
	return n
}

func run(fn func(udf.Row) (any, error), ptr, length uint32) uint64 {
	if input == nil || ptr != uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input)))) || length > uint32(len(input)) {
		return fail("the row is not in the buffer alloc returned")
	}
	var row udf.Row
	if err := json.Unmarshal(input[:length], &row); err != nil {
		return fail("decoding the row: " + err.Error())
	}
	v, err := fn(row)
	if err != nil {
		return fail(err.Error())
	}
	s, ok := v.(string)
	if !ok {
		return fail("the workload returned no string")
	}
	output = append(output[:0], s...)
	return pack(false)
}

func fail(msg string) uint64 {
	output = append(output[:0], msg...)
	return pack(true)
}

func pack(isErr bool) uint64 {
	n := uint64(len(output))
	if isErr {
		n |= failed
	}
	if len(output) == 0 {
		return n
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(output))))<<32 | n
}
