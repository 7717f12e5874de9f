// Package direct is the mechanism "direct", the baseline: the contract's functions called as Go
// functions in the host binary.
//
// The calls go through func values held in the plugin (fields set at Open), and the plugin reaches the
// op through the contract.Plugin interface, so the compiler can neither inline the function into the
// benchmark loop nor fold a call with a constant argument: each call is an indirect call of
// contract.IntFunc / contract.BytesFunc, as a call into a loaded plugin's symbol is.
package direct

import "bridgebench/plugincall/contract"

// Name is the mechanism name.
const Name = "direct"

func init() { contract.Register(Name, Open) }

type plugin struct {
	intFn   func(int64) int64
	bytesFn func([]byte) []byte
}

// Open returns the plugin; it reads nothing from cfg.
func Open(contract.Config) (contract.Plugin, error) {
	return &plugin{intFn: contract.IntFunc, bytesFn: contract.BytesFunc}, nil
}

func (p *plugin) Int(x int64) (int64, error)      { return p.intFn(x), nil }
func (p *plugin) Bytes(in []byte) ([]byte, error) { return p.bytesFn(in), nil }
func (p *plugin) Close() error                    { return nil }
