// Package extism is the mechanism "extism": the Extism Go SDK (on wazero) running a WebAssembly plugin
// built from Go with the Extism Go PDK (servers/extismplugin, GOOS=wasip1 -buildmode=c-shared). The
// plugin file is Config["wasm"] (CALL_WASM). Each call copies the input into the plugin's memory, runs
// the export and copies the output back; a non-zero exit code or a trap is returned as an error.
package extism

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"bridgebench/plugincall/contract"

	extism "github.com/extism/go-sdk"
)

type plugin struct {
	p   *extism.Plugin
	ctx context.Context
	in  [8]byte
}

func open(cfg contract.Config) (contract.Plugin, error) {
	path := cfg["wasm"]
	if path == "" {
		return nil, errors.New(`no wasm plugin: set Config["wasm"] (CALL_WASM) to the built servers/extismplugin`)
	}
	ctx := context.Background()
	manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmFile{Path: path}}}
	p, err := extism.NewPlugin(ctx, manifest, extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("extism: load %s: %w", path, err)
	}
	return &plugin{p: p, ctx: ctx}, nil
}

func (p *plugin) call(fn string, in []byte) ([]byte, error) {
	exit, out, err := p.p.CallWithContext(p.ctx, fn, in)
	if err != nil {
		return nil, fmt.Errorf("extism %s: %w", fn, err)
	}
	if exit != 0 {
		return nil, fmt.Errorf("extism %s: exit code %d: %s", fn, exit, p.p.GetError())
	}
	return out, nil
}

func (p *plugin) Int(x int64) (int64, error) {
	binary.LittleEndian.PutUint64(p.in[:], uint64(x))
	out, err := p.call("int_func", p.in[:])
	if err != nil {
		return 0, err
	}
	if len(out) != 8 {
		return 0, fmt.Errorf("extism int_func: answer of %d bytes, want 8", len(out))
	}
	return int64(binary.LittleEndian.Uint64(out)), nil
}

func (p *plugin) Bytes(in []byte) ([]byte, error) { return p.call("bytes_func", in) }

func (p *plugin) Close() error { return p.p.Close(p.ctx) }

func init() { contract.Register("extism", open) }
