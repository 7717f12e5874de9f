//go:build luajit && !lua54

package luavm

// #cgo pkg-config: luajit
// #cgo CFLAGS: -DBB_LUAJIT
import "C"

// Flavour is the VM this binary links: mechanism names start with it.
const Flavour = "luajit"

// luaVersion is the directory of the VM's C modules under /usr/lib/<multiarch>/lua/ (LuaJIT loads
// Lua 5.1 modules).
const luaVersion = "5.1"
