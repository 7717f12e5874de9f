module bridgebench/hello

go 1.24
