module bridgebench/udftrim

go 1.25.0

require (
	bridgebench/probe v0.0.0
	github.com/tetratelabs/wazero v1.12.0
	github.com/traefik/yaegi v0.16.1
	github.com/yuin/gopher-lua v1.1.2
)

require golang.org/x/sys v0.44.0 // indirect

replace bridgebench/probe => ../../../probes/go
