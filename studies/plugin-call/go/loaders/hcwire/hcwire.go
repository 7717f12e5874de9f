// Package hcwire is what the host and the server program of the hashicorp/go-plugin mechanisms share:
// the handshake, the plugin sets (protocol version 1 = net/rpc, version 2 = gRPC) and both transports'
// client and server halves of the contract.
//
// The gRPC service is written by hand, without protoc: a grpc.ServiceDesc with two unary methods whose
// messages are raw byte slices, carried by a codec registered under its own content-subtype ("bbraw").
// Int's argument and answer are 8 bytes little-endian; Bytes' are the payload itself. Because the codec
// is chosen per call by content-subtype, go-plugin's own protobuf services (health, broker, stdio,
// controller) on the same grpc.Server keep the default proto codec.
package hcwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/rpc"

	"bridgebench/plugincall/contract"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// PluginName is the name the plugin is dispensed under.
const PluginName = "contract"

// Protocol versions: the host asks for one; the server holds a plugin set for each, and go-plugin
// picks the transport from the set's plugin type.
const (
	VersionNetRPC = 1
	VersionGRPC   = 2
)

// Handshake makes the server refuse to run unless launched by a host of this study.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  VersionNetRPC,
	MagicCookieKey:   "BRIDGEBENCH_PLUGIN_CALL",
	MagicCookieValue: "contract-v1",
}

// Remote is what a dispensed plugin is on the host side, over either transport.
type Remote interface {
	Int(x int64) (int64, error)
	Bytes(in []byte) ([]byte, error)
}

// ServerPlugins are the plugin sets a server program serves.
func ServerPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		VersionNetRPC: {PluginName: &NetRPCPlugin{}},
		VersionGRPC:   {PluginName: &GRPCPlugin{}},
	}
}

// ---- net/rpc ----

// NetRPCPlugin is the net/rpc transport (it implements plugin.Plugin only, so go-plugin serves it over
// net/rpc even when the server has a gRPC server configured).
type NetRPCPlugin struct{}

// Server returns the object whose methods net/rpc exposes.
func (NetRPCPlugin) Server(*plugin.MuxBroker) (interface{}, error) { return &RPCServer{}, nil }

// Client returns the host-side stub.
func (NetRPCPlugin) Client(_ *plugin.MuxBroker, c *rpc.Client) (interface{}, error) {
	return &rpcRemote{c: c}, nil
}

// RPCServer computes the contract for net/rpc (exported methods of the form F(arg, *reply) error).
type RPCServer struct{}

// Int answers contract.IntFunc.
func (RPCServer) Int(x int64, out *int64) error {
	*out = contract.IntFunc(x)
	return nil
}

// Bytes answers contract.BytesFunc.
func (RPCServer) Bytes(in []byte, out *[]byte) error {
	*out = contract.BytesFunc(in)
	return nil
}

type rpcRemote struct{ c *rpc.Client }

func (r *rpcRemote) Int(x int64) (int64, error) {
	var out int64
	if err := r.c.Call("Plugin.Int", x, &out); err != nil {
		return 0, fmt.Errorf("hcrpc Int: %w", err)
	}
	return out, nil
}

func (r *rpcRemote) Bytes(in []byte) ([]byte, error) {
	var out []byte
	if err := r.c.Call("Plugin.Bytes", in, &out); err != nil {
		return nil, fmt.Errorf("hcrpc Bytes: %w", err)
	}
	if out == nil { // gob sends an empty slice as nothing
		out = []byte{}
	}
	return out, nil
}

// ---- gRPC ----

// CodecName is the content-subtype of the raw-bytes codec.
const CodecName = "bbraw"

// rawCodec marshals *[]byte as its bytes, nothing else.
type rawCodec struct{}

func (rawCodec) Name() string { return CodecName }

func (rawCodec) Marshal(v any) ([]byte, error) {
	p, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("bbraw codec: cannot marshal %T", v)
	}
	return *p, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("bbraw codec: cannot unmarshal into %T", v)
	}
	*p = append((*p)[:0], data...) // grpc may reuse data's buffer
	return nil
}

func init() { encoding.RegisterCodec(rawCodec{}) }

const (
	serviceName  = "bridgebench.plugincall.Contract"
	methodInt    = "/" + serviceName + "/Int"
	methodBytes  = "/" + serviceName + "/Bytes"
	errIntLength = "Int wants 8 bytes, got %d"
)

// contractService is the handler type of the hand-written service.
type contractService interface{ contract() }

type grpcServer struct{}

func (grpcServer) contract() {}

func intHandler(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	var in []byte
	if err := dec(&in); err != nil {
		return nil, err
	}
	h := func(_ context.Context, req any) (any, error) {
		p := *req.(*[]byte)
		if len(p) != 8 {
			return nil, fmt.Errorf(errIntLength, len(p))
		}
		out := binary.LittleEndian.AppendUint64(nil, uint64(contract.IntFunc(int64(binary.LittleEndian.Uint64(p)))))
		return &out, nil
	}
	if icpt == nil {
		return h(ctx, &in)
	}
	return icpt(ctx, &in, &grpc.UnaryServerInfo{Server: srv, FullMethod: methodInt}, h)
}

func bytesHandler(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	var in []byte
	if err := dec(&in); err != nil {
		return nil, err
	}
	h := func(_ context.Context, req any) (any, error) {
		out := contract.BytesFunc(*req.(*[]byte))
		return &out, nil
	}
	if icpt == nil {
		return h(ctx, &in)
	}
	return icpt(ctx, &in, &grpc.UnaryServerInfo{Server: srv, FullMethod: methodBytes}, h)
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*contractService)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Int", Handler: intHandler},
		{MethodName: "Bytes", Handler: bytesHandler},
	},
	Metadata: "hand-written (hcwire.go)",
}

// GRPCPlugin is the gRPC transport.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

// GRPCServer registers the hand-written service.
func (GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, grpcServer{})
	return nil
}

// GRPCClient returns the host-side stub.
func (GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (interface{}, error) {
	return &grpcRemote{cc: cc}, nil
}

type grpcRemote struct{ cc *grpc.ClientConn }

var callOpt = grpc.CallContentSubtype(CodecName)

func (r *grpcRemote) Int(x int64) (int64, error) {
	in := binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(x))
	var out []byte
	if err := r.cc.Invoke(context.Background(), methodInt, &in, &out, callOpt); err != nil {
		return 0, fmt.Errorf("hcgrpc Int: %w", err)
	}
	if len(out) != 8 {
		return 0, fmt.Errorf("hcgrpc Int: answer of %d bytes, want 8", len(out))
	}
	return int64(binary.LittleEndian.Uint64(out)), nil
}

func (r *grpcRemote) Bytes(in []byte) ([]byte, error) {
	out := []byte{}
	if err := r.cc.Invoke(context.Background(), methodBytes, &in, &out, callOpt); err != nil {
		return nil, fmt.Errorf("hcgrpc Bytes: %w", err)
	}
	return out, nil
}

// ErrNoServer is returned when Config["server"] is empty.
var ErrNoServer = errors.New(`no server binary: set Config["server"] (CALL_SERVER) to the built servers/hcplugin`)
