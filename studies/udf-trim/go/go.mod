module bridgebench/udftrim

go 1.24

require bridgebench/probe v0.0.0

require (
	github.com/traefik/yaegi v0.16.1 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)

replace bridgebench/probe => ../../../probes/go
