module bridgebench/probe

go 1.24

require golang.org/x/sys v0.35.0
