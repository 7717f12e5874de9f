package main

// The out-of-process mechanisms: each registers itself with the contract in its init function.
import (
	_ "bridgebench/plugincall/loaders/extism"
	_ "bridgebench/plugincall/loaders/hcgrpc"
	_ "bridgebench/plugincall/loaders/hcrpc"
)
