// Package goplugin is the mechanism "goplugin": Go's plugin package. Open calls plugin.Open on the .so
// named by Config["plugin"] (built from ../../plugins/goplugin with go build -buildmode=plugin by the
// same toolchain, with the same flags, as the host) and looks the symbols Int and Bytes up once; a call
// is then an indirect call of a function in the shared object, on the host's goroutine and heap: the
// payload is passed as the slice itself, nothing is copied but what BytesFunc makes.
//
// A Go plugin cannot be unloaded: Close only drops the references.
package goplugin

import (
	"fmt"
	"plugin"

	"bridgebench/plugincall/contract"
)

// Name is the mechanism name.
const Name = "goplugin"

func init() { contract.Register(Name, Open) }

type goPlugin struct {
	intFn   func(int64) int64
	bytesFn func([]byte) []byte
}

// Open loads cfg["plugin"] and looks its symbols up.
func Open(cfg contract.Config) (contract.Plugin, error) {
	path := cfg["plugin"]
	if path == "" {
		return nil, fmt.Errorf("%s: no plugin path (CALL_PLUGIN: the .so built with go build -buildmode=plugin ./plugins/goplugin)", Name)
	}
	so, err := plugin.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	p := &goPlugin{}
	if p.intFn, err = lookup[func(int64) int64](so, path, "Int"); err != nil {
		return nil, err
	}
	if p.bytesFn, err = lookup[func([]byte) []byte](so, path, "Bytes"); err != nil {
		return nil, err
	}
	return p, nil
}

func lookup[F any](so *plugin.Plugin, path, name string) (F, error) {
	var zero F
	sym, err := so.Lookup(name)
	if err != nil {
		return zero, fmt.Errorf("%s: %s: %w", Name, path, err)
	}
	fn, ok := sym.(F)
	if !ok {
		return zero, fmt.Errorf("%s: %s's %s is a %T, want a %T", Name, path, name, sym, zero)
	}
	return fn, nil
}

func (p *goPlugin) Int(x int64) (int64, error)      { return p.intFn(x), nil }
func (p *goPlugin) Bytes(in []byte) ([]byte, error) { return p.bytesFn(in), nil }

func (p *goPlugin) Close() error {
	p.intFn, p.bytesFn = nil, nil
	return nil
}
