// Package lua54capi is the mechanism "lua54capi": the contract's functions as C functions registered
// in a Lua 5.4 state (the Debian liblua5.4 library, through its C API and cgo; plugin.c), each call
// going through Lua: a tiny Lua function that calls the C function.
//
// A call is one cgo transition into a C helper that pushes the wrapper and the argument, lua_pcall's
// the wrapper (which calls the C function) and reads the result. The int shape crosses as a Lua
// integer. The bytes shape copies the payload twice: the Go input (passed as a pointer, not copied on
// the Go side) into a Lua string (lua_pushlstring), and the result string (lua_tolstring) into a new Go
// slice (memcpy in the helper); the C function itself builds its result in a luaL_Buffer. Every call
// into Lua is a lua_pcall, so a Lua error never unwinds through Go frames.
//
// A lua_State is single-threaded; so is a Plugin of this package.
package lua54capi

/*
#cgo pkg-config: lua5.4
#include <stdlib.h>
#include "plugin.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"bridgebench/plugincall/contract"
)

// Name is the mechanism name.
const Name = "lua54capi"

func init() { contract.Register(Name, Open) }

type luaPlugin struct{ p *C.pc_lua }

// Open makes the Lua state; it reads nothing from cfg.
func Open(contract.Config) (contract.Plugin, error) {
	var msg *C.char
	p := C.pc_open(&msg)
	if p == nil {
		return nil, fmt.Errorf("%s: %s", Name, C.GoString(msg))
	}
	return &luaPlugin{p: p}, nil
}

var errClosed = errors.New(Name + ": plugin closed")

func (l *luaPlugin) fail(what string) error {
	var buf [512]C.char
	C.pc_error(l.p, &buf[0], C.size_t(len(buf)))
	return fmt.Errorf("%s: %s: %s", Name, what, C.GoString(&buf[0]))
}

func (l *luaPlugin) Int(x int64) (int64, error) {
	if l.p == nil {
		return 0, errClosed
	}
	r := C.pc_int(l.p, C.int64_t(x))
	if r.status != C.LUA_OK {
		return 0, l.fail("int")
	}
	return int64(r.value), nil
}

func (l *luaPlugin) Bytes(in []byte) ([]byte, error) {
	if l.p == nil {
		return nil, errClosed
	}
	out := make([]byte, len(in))
	r := C.pc_bytes(l.p, (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(in))), C.size_t(len(in)),
		(*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(out))), C.size_t(len(out)))
	if r.status != C.LUA_OK {
		return nil, l.fail("bytes")
	}
	if int(r.value) != len(in) {
		return nil, fmt.Errorf("%s: bytes returned %d bytes for %d", Name, r.value, len(in))
	}
	return out, nil
}

func (l *luaPlugin) Close() error {
	if l.p != nil {
		C.pc_close(l.p)
		l.p = nil
	}
	return nil
}
