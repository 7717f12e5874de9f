// Command hcplugin is the plugin server program of the hashicorp/go-plugin mechanisms (hcrpc, hcgrpc):
// launched by the host, it serves the contract over net/rpc (protocol version 1) or gRPC (version 2),
// whichever the host asks for.
package main

import (
	"bridgebench/plugincall/loaders/hcwire"

	"github.com/hashicorp/go-plugin"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  hcwire.Handshake,
		VersionedPlugins: hcwire.ServerPlugins(),
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}
