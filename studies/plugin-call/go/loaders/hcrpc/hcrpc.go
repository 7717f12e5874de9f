// Package hcrpc is the mechanism "hcrpc": hashicorp/go-plugin over net/rpc. The host launches the server
// program servers/hcplugin (Config["server"], from CALL_SERVER), dispenses the plugin and calls it over
// net/rpc on a yamux stream of the plugin's socket.
package hcrpc

import (
	"bridgebench/plugincall/contract"
	"bridgebench/plugincall/loaders/hcwire"
)

func init() {
	contract.Register("hcrpc", func(cfg contract.Config) (contract.Plugin, error) {
		return hcwire.Open(cfg, hcwire.VersionNetRPC)
	})
}
