// Package cgo is the mechanism "cgo": the contract's functions written in C (in this package's
// preamble, compiled into the host binary) and called through cgo.
//
// A call is one cgo transition each way. The bytes shape copies nothing across the boundary: the C
// function reads the Go input slice in place and writes into a Go-allocated output slice, both passed
// as unsafe pointers (allowed by the cgo pointer rules: the memory holds no Go pointers and C keeps no
// reference after the call). The one allocation is the output, as with BytesFunc itself.
package cgo

/*
#include <stddef.h>
#include <stdint.h>

static int64_t plugincall_int(int64_t x) {
	// Go's int64 arithmetic wraps; C's signed overflow does not, so compute in uint64_t.
	return (int64_t)(((uint64_t)x * 2654435761u + 12345u) & 0xffffffffu);
}

static void plugincall_bytes(const uint8_t *in, size_t n, uint8_t *out) {
	for (size_t i = 0; i < n; i++) {
		out[n - 1 - i] = in[i] ^ 0x5a;
	}
}
*/
import "C"

import (
	"unsafe"

	"bridgebench/plugincall/contract"
)

// Name is the mechanism name.
const Name = "cgo"

func init() { contract.Register(Name, Open) }

type cPlugin struct{}

// Open returns the plugin; it reads nothing from cfg (the C code is linked into the binary).
func Open(contract.Config) (contract.Plugin, error) { return cPlugin{}, nil }

func (cPlugin) Int(x int64) (int64, error) { return int64(C.plugincall_int(C.int64_t(x))), nil }

func (cPlugin) Bytes(in []byte) ([]byte, error) {
	out := make([]byte, len(in))
	// An empty payload still makes the call (C then touches no memory), so bytes/0 is a crossing too.
	C.plugincall_bytes((*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(in))), C.size_t(len(in)),
		(*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(out))))
	return out, nil
}

func (cPlugin) Close() error { return nil }
