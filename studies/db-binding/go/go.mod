module bridgebench/dbbinding

go 1.24

require bridgebench/probe v0.0.0

require golang.org/x/sys v0.35.0 // indirect

replace bridgebench/probe => ../../../probes/go
