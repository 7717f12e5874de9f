// Package wazero is the mechanism "wazero": the contract's functions compiled from Go to a WebAssembly
// reactor module (../../wasm/guest, GOOS=wasip1 -buildmode=c-shared) and run by wazero, a WebAssembly
// runtime written in Go (no cgo; on amd64 and arm64 it compiles the module to machine code).
//
// Open reads Config["wasm"], compiles the module, instantiates it once (running _initialize: the Go
// runtime's start-up inside the module) and looks the exports up. Int is one call of int_fn. Bytes
// crosses through the instance's linear memory: the payload is copied in (into the buffer the guest's
// alloc export returned, asked for again only when a payload outgrows it), bytes_fn computes into the
// guest's output buffer, and the result is copied out into a new Go slice: two copies per call.
// Calls use context.Background (no deadline: wazero then starts no goroutine to watch the context).
//
// An instance is single-threaded; so is a Plugin of this package.
package wazero

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"bridgebench/plugincall/contract"
)

// Name is the mechanism name.
const Name = "wazero"

func init() { contract.Register(Name, Open) }

type wasmPlugin struct {
	ctx                  context.Context
	rt                   wazero.Runtime
	mod                  api.Module
	mem                  api.Memory
	intFn, alloc, bytesF api.Function
	stack                [2]uint64
	inPtr, inCap         uint32
	stderr               strings.Builder
}

// Open compiles and instantiates the module cfg["wasm"] names.
func Open(cfg contract.Config) (contract.Plugin, error) {
	path := cfg["wasm"]
	if path == "" {
		return nil, fmt.Errorf("%s: no module path (CALL_WASM: the .wasm built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared ./wasm/guest)", Name)
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	p := &wasmPlugin{ctx: context.Background()}
	p.rt = wazero.NewRuntime(p.ctx)
	if err := p.open(path, bin); err != nil {
		_ = p.rt.Close(p.ctx)
		return nil, err
	}
	return p, nil
}

func (p *wasmPlugin) open(path string, bin []byte) error {
	if _, err := wasi_snapshot_preview1.Instantiate(p.ctx, p.rt); err != nil {
		return fmt.Errorf("%s: WASI: %w", Name, err)
	}
	compiled, err := p.rt.CompileModule(p.ctx, bin)
	if err != nil {
		return fmt.Errorf("%s: compiling %s: %w", Name, path, err)
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	want := map[string][2][]api.ValueType{
		"int_fn":   {{i64}, {i64}},
		"alloc":    {{i32}, {i32}},
		"bytes_fn": {{i32, i32}, {i64}},
	}
	exports := compiled.ExportedFunctions()
	for name, sig := range want {
		def, ok := exports[name]
		if !ok {
			return fmt.Errorf("%s: %s exports no function %s", Name, path, name)
		}
		if string(def.ParamTypes()) != string(sig[0]) || string(def.ResultTypes()) != string(sig[1]) {
			return fmt.Errorf("%s: %s's %s has the wrong signature", Name, path, name)
		}
	}
	mc := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").WithStderr(&p.stderr).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader)
	if p.mod, err = p.rt.InstantiateModule(p.ctx, compiled, mc); err != nil {
		return fmt.Errorf("%s: instantiating %s: %w%s", Name, path, err, p.stderrSuffix())
	}
	if p.mem = p.mod.Memory(); p.mem == nil {
		return fmt.Errorf("%s: %s has no memory", Name, path)
	}
	p.intFn, p.alloc, p.bytesF = p.mod.ExportedFunction("int_fn"), p.mod.ExportedFunction("alloc"), p.mod.ExportedFunction("bytes_fn")
	return nil
}

func (p *wasmPlugin) stderrSuffix() string {
	first, _, _ := strings.Cut(strings.TrimSpace(p.stderr.String()), "\n")
	if first == "" {
		return ""
	}
	return " (guest stderr: " + first + ")"
}

func (p *wasmPlugin) fail(export string, err error) error {
	first, _, _ := strings.Cut(err.Error(), "\n") // leave wazero's wasm stack trace out
	return fmt.Errorf("%s: %s: %s%s", Name, export, first, p.stderrSuffix())
}

func (p *wasmPlugin) Int(x int64) (int64, error) {
	if p.mod == nil {
		return 0, errClosed
	}
	p.stack[0] = api.EncodeI64(x)
	if err := p.intFn.CallWithStack(p.ctx, p.stack[:]); err != nil {
		return 0, p.fail("int_fn", err)
	}
	return int64(p.stack[0]), nil
}

var errClosed = errors.New(Name + ": plugin closed")

func (p *wasmPlugin) Bytes(in []byte) ([]byte, error) {
	if p.mod == nil {
		return nil, errClosed
	}
	if uint64(len(in)) >= 1<<31 {
		return nil, fmt.Errorf("%s: a payload of %d bytes is too long", Name, len(in))
	}
	n := uint32(len(in))
	if p.inPtr == 0 || n > p.inCap {
		p.stack[0] = api.EncodeU32(n)
		if err := p.alloc.CallWithStack(p.ctx, p.stack[:]); err != nil {
			return nil, p.fail("alloc", err)
		}
		p.inPtr, p.inCap = api.DecodeU32(p.stack[0]), n
	}
	if !p.mem.Write(p.inPtr, in) {
		return nil, fmt.Errorf("%s: alloc returned a buffer outside memory", Name)
	}
	p.stack[0], p.stack[1] = api.EncodeU32(p.inPtr), api.EncodeU32(n)
	if err := p.bytesF.CallWithStack(p.ctx, p.stack[:]); err != nil {
		return nil, p.fail("bytes_fn", err)
	}
	packed := p.stack[0]
	if packed>>63 != 0 {
		return nil, fmt.Errorf("%s: bytes_fn: the payload is not in the buffer alloc returned", Name)
	}
	ptr, length := uint32(packed>>32), uint32(packed)
	view, ok := p.mem.Read(ptr, length)
	if !ok || length != n {
		return nil, fmt.Errorf("%s: bytes_fn returned %d bytes at %#x, outside memory or not %d", Name, length, ptr, n)
	}
	out := make([]byte, length)
	copy(out, view)
	return out, nil
}

func (p *wasmPlugin) Close() error {
	if p.mod == nil {
		return nil
	}
	p.mod = nil
	return p.rt.Close(p.ctx)
}
