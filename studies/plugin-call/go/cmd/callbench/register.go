package main

// The in-process mechanisms. The out-of-process ones are in register_outofprocess.go.
import (
	_ "bridgebench/plugincall/loaders/cgo"
	_ "bridgebench/plugincall/loaders/direct"
	_ "bridgebench/plugincall/loaders/goplugin"
	_ "bridgebench/plugincall/loaders/lua54capi"
	_ "bridgebench/plugincall/loaders/wazero"
	_ "bridgebench/plugincall/loaders/yaegi"
)
