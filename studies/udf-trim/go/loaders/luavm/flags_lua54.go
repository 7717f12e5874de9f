//go:build lua54 && !luajit

package luavm

// #cgo pkg-config: lua5.4
import "C"

// Flavour is the VM this binary links: mechanism names start with it.
const Flavour = "lua54"

// luaVersion is the directory of the VM's C modules under /usr/lib/<multiarch>/lua/.
const luaVersion = "5.4"
