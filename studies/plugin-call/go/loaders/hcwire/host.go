package hcwire

import (
	"fmt"
	"os"
	"os/exec"

	"bridgebench/plugincall/contract"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// MaxSocketPath is the longest path a unix socket's address holds on Linux (sun_path, less its NUL).
const MaxSocketPath = 107

// Host is a launched server program and its dispensed plugin: a contract.Plugin.
type Host struct {
	client  *plugin.Client
	remote  Remote
	sockets string // the folder the server makes its unix socket in, removed on Close
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
	// The server makes its socket in os.TempDir unless told otherwise, and a server killed outright
	// (SIGKILL, or by go-plugin after its grace period) leaves it there: give it a folder of its own.
	sockets, err := os.MkdirTemp("", "hcwire")
	if err != nil {
		return nil, fmt.Errorf("socket folder: %w", err)
	}
	// go-plugin names the socket "plugin" and up to 10 digits in that folder; a path longer than a unix
	// socket's address holds makes the server fail to listen, which the client reports only as a message it
	// did not recognise. Say what it is.
	if n := len(sockets) + len("/plugin") + 10; n > MaxSocketPath {
		os.RemoveAll(sockets)
		return nil, fmt.Errorf("the plugin's unix socket would be %d bytes long in %s, more than the %d a socket's "+
			"address holds: point TMPDIR at a shorter folder", n, sockets, MaxSocketPath)
	}
	cmd := exec.Command(server)
	cmd.Env = []string{plugin.EnvUnixSocketDir + "=" + sockets} // go-plugin adds this process's environment
	all := ServerPlugins()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{version: all[version]},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{protocol},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "hcplugin",
			Level:  hclog.Warn,
			Output: os.Stderr,
		}),
	})
	h := &Host{client: client, sockets: sockets}
	cp, err := client.Client()
	if err != nil {
		h.stop()
		return nil, fmt.Errorf("start %s: %w", server, err)
	}
	if got, proto := client.NegotiatedVersion(), client.Protocol(); got != version || proto != protocol {
		h.stop()
		return nil, fmt.Errorf("server negotiated protocol version %d over %s, want %d over %s", got, proto, version, protocol)
	}
	raw, err := cp.Dispense(PluginName)
	if err != nil {
		h.stop()
		return nil, fmt.Errorf("dispense %s: %w", PluginName, err)
	}
	remote, ok := raw.(Remote)
	if !ok {
		h.stop()
		return nil, fmt.Errorf("dispensed %T, not a contract remote", raw)
	}
	h.remote = remote
	return h, nil
}

// stop kills the server (gracefully, then by force after go-plugin's grace period) and removes its
// socket folder, whatever it left there.
func (h *Host) stop() {
	h.client.Kill()
	_ = os.RemoveAll(h.sockets)
}

// Int calls the plugin process.
func (h *Host) Int(x int64) (int64, error) { return h.remote.Int(x) }

// Bytes calls the plugin process.
func (h *Host) Bytes(in []byte) ([]byte, error) { return h.remote.Bytes(in) }

// Close stops the plugin process (gracefully, then by force after go-plugin's grace period) and
// returns once it has exited.
func (h *Host) Close() error {
	h.stop()
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
