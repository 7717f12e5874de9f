package hcwire

import (
	"fmt"
	"os"
	"os/exec"

	"bridgebench/plugincall/contract"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// Host is a launched server program and its dispensed plugin: a contract.Plugin.
type Host struct {
	client *plugin.Client
	remote Remote
}

var _ contract.Plugin = (*Host)(nil)

// Open launches Config["server"], asks for the given protocol version (VersionNetRPC or VersionGRPC)
// and dispenses the plugin.
func Open(cfg contract.Config, version int) (*Host, error) {
	server := cfg["server"]
	if server == "" {
		return nil, ErrNoServer
	}
	if _, err := os.Stat(server); err != nil {
		return nil, fmt.Errorf("server binary: %w", err)
	}
	protocol := plugin.ProtocolNetRPC
	if version == VersionGRPC {
		protocol = plugin.ProtocolGRPC
	}
	all := ServerPlugins()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{version: all[version]},
		Cmd:              exec.Command(server),
		AllowedProtocols: []plugin.Protocol{protocol},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "hcplugin",
			Level:  hclog.Warn,
			Output: os.Stderr,
		}),
	})
	cp, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start %s: %w", server, err)
	}
	if got, proto := client.NegotiatedVersion(), client.Protocol(); got != version || proto != protocol {
		client.Kill()
		return nil, fmt.Errorf("server negotiated protocol version %d over %s, want %d over %s", got, proto, version, protocol)
	}
	raw, err := cp.Dispense(PluginName)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("dispense %s: %w", PluginName, err)
	}
	remote, ok := raw.(Remote)
	if !ok {
		client.Kill()
		return nil, fmt.Errorf("dispensed %T, not a contract remote", raw)
	}
	return &Host{client: client, remote: remote}, nil
}

// Int calls the plugin process.
func (h *Host) Int(x int64) (int64, error) { return h.remote.Int(x) }

// Bytes calls the plugin process.
func (h *Host) Bytes(in []byte) ([]byte, error) { return h.remote.Bytes(in) }

// Close stops the plugin process (gracefully, then by force after go-plugin's grace period) and
// returns once it has exited.
func (h *Host) Close() error {
	h.client.Kill()
	if !h.client.Exited() {
		return fmt.Errorf("plugin process %d still running after Kill", h.Pid())
	}
	return nil
}

// Pid is the plugin process's id (0 if unknown).
func (h *Host) Pid() int {
	if rc := h.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Exited reports whether the plugin process has exited.
func (h *Host) Exited() bool { return h.client.Exited() }
