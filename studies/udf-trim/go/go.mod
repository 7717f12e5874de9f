module bridgebench/udftrim

go 1.24

require (
	bridgebench/probe v0.0.0
	github.com/traefik/yaegi v0.16.1
	github.com/yuin/gopher-lua v1.1.2
)

require golang.org/x/sys v0.35.0 // indirect

replace bridgebench/probe => ../../../probes/go
