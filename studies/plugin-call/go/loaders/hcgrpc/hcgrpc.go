// Package hcgrpc is the mechanism "hcgrpc": hashicorp/go-plugin over gRPC, with a hand-written service
// and raw-bytes codec (see hcwire). The host launches the server program servers/hcplugin
// (Config["server"], from CALL_SERVER), which serves gRPC when the host asks for protocol version 2.
package hcgrpc

import (
	"bridgebench/plugincall/contract"
	"bridgebench/plugincall/loaders/hcwire"
)

func init() {
	contract.Register("hcgrpc", func(cfg contract.Config) (contract.Plugin, error) {
		return hcwire.Open(cfg, hcwire.VersionGRPC)
	})
}
