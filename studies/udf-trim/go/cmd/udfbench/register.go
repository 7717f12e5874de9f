package main

// The mechanisms every build has. Optional ones (cgo Lua VMs, WebAssembly) are compiled in by their
// own register_<name>.go file behind a build tag, e.g. //go:build luajit.
import (
	_ "bridgebench/udftrim/loaders/gopherlua"
	_ "bridgebench/udftrim/loaders/native"
	_ "bridgebench/udftrim/loaders/plugin"
	_ "bridgebench/udftrim/loaders/yaegi"
)
