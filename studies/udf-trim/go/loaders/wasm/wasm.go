// Package wasm is the mechanism "wasm": the user's code is a WebAssembly module (the Go workloads
// compiled with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, see ../../wasm/guest) run by wazero, a
// WebAssembly runtime written in Go (no cgo).
//
// Load("path/to/udf.wasm#trim") reads the module, compiles it once (compiled modules are shared by the
// handlers of a process that load the same bytes), instantiates it and calls its _initialize (a reactor
// module: the Go runtime starts, main is never called). Value passes the row as JSON text through the
// instance's linear memory: Go encodes the row (udf.Marshal's encoding), the text is copied into a
// buffer the guest's alloc export gave, the export named after '#' decodes, computes with encoding/json
// and returns its result's address and length, and the result is copied out as a string.
//
// An instance runs one call at a time, so a handler keeps a pool of instances, grown up to UDF_WASM_POOL
// (default GOMAXPROCS) as concurrent calls need them.
//
// Deadline: UDF_TIMEOUT_MS (default 100; 0: none) per call. With a deadline the module is compiled with
// wazero's termination checks (RuntimeConfig.WithCloseOnContextDone: compiled code checks at function
// entries and loop back-edges whether the call's context is done) and each call gets a context with
// that timeout; past it the instance is closed, Value returns an error wrapping ErrTimeout, and a new
// instance replaces it. Without a deadline, neither the checks nor the per-call context (wazero starts a
// goroutine per call to watch a context) are paid; they are not small for Go-compiled code, which makes
// many small calls: trim/small took ~500 µs per call with the checks against ~200 µs without (the package
// benchmarks on a 2-vCPU development VM). Most of the rest is the guest itself: Go's encoding/json
// compiled to wasm runs ~15× slower than native in wazero and ~9× in V8 (Node's WASI, same module).
package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"bridgebench/udftrim/udf"
)

// Name is the mechanism name.
const Name = "wasm"

// Environment variables and defaults.
const (
	TimeoutEnv     = "UDF_TIMEOUT_MS" // deadline per call in milliseconds, 0: none
	PoolEnv        = "UDF_WASM_POOL"  // most instances a handler keeps (default GOMAXPROCS)
	DefaultTimeout = 100 * time.Millisecond
)

// ErrTimeout is wrapped by the error of a call that ran past its deadline.
var ErrTimeout = errors.New("deadline passed")

// failed is the bit of a packed result's length that marks an error message (see the guest).
const failed = 1 << 31

func init() { udf.Register(Name, func() udf.Handler { return New() }) }

// Handler is an unloaded or loaded wasm handler. A loaded handler's Value may be called from many
// goroutines at once.
type Handler struct {
	// Timeout is the deadline of one call; 0: none. From UDF_TIMEOUT_MS, else DefaultTimeout.
	Timeout time.Duration
	// PoolSize is the most instances the handler keeps; from UDF_WASM_POOL, else GOMAXPROCS.
	PoolSize int

	envErr error

	path, export string
	module       *module
	pool         *udf.Pool[instance]
	loaded       bool
}

// New returns an unloaded handler configured from the environment; a malformed variable is reported
// by Load.
func New() *Handler {
	h := &Handler{Timeout: DefaultTimeout, PoolSize: runtime.GOMAXPROCS(0)}
	if s := strings.TrimSpace(os.Getenv(TimeoutEnv)); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms < 0 {
			h.envErr = fmt.Errorf("%s=%q: want a number of milliseconds, 0 for none", TimeoutEnv, s)
		}
		h.Timeout = time.Duration(ms) * time.Millisecond
	}
	if s := strings.TrimSpace(os.Getenv(PoolEnv)); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			h.envErr = fmt.Errorf("%s=%q: want a number of instances, at least 1", PoolEnv, s)
		}
		h.PoolSize = n
	}
	return h
}

// String names the mechanism.
func (h *Handler) String() string { return Name }

// module is a compiled module in the runtime that compiled it.
type module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

type cacheKey struct {
	sum       [sha256.Size]byte
	terminate bool
}

var (
	cacheMu  sync.Mutex
	runtimes = map[bool]wazero.Runtime{} // by whether compiled code checks for termination
	modules  = map[cacheKey]*module{}
)

// compile returns the module of these bytes, compiling it the first time.
func compile(wasm []byte, terminate bool) (*module, error) {
	key := cacheKey{sha256.Sum256(wasm), terminate}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if m, ok := modules[key]; ok {
		return m, nil
	}
	ctx := context.Background()
	rt, ok := runtimes[terminate]
	if !ok {
		rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(terminate))
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			return nil, err
		}
		runtimes[terminate] = rt
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, err
	}
	m := &module{rt: rt, compiled: compiled}
	modules[key] = m
	return m, nil
}

// Load takes "PATH#EXPORT": the .wasm file and the export to call for each row, (i32, i32) -> i64. The
// module must also export alloc, (i32) -> i32. It compiles the module (once per process) and makes one
// instance.
func (h *Handler) Load(uriOrCode string) (udf.Handler, error) {
	if h.envErr != nil {
		return nil, fmt.Errorf("%s: %w", Name, h.envErr)
	}
	if h.PoolSize < 1 {
		return nil, fmt.Errorf("%s: PoolSize %d, want at least 1", Name, h.PoolSize)
	}
	i := strings.LastIndexByte(uriOrCode, '#')
	if i < 0 || i == len(uriOrCode)-1 {
		return nil, fmt.Errorf("%s: want PATH.wasm#EXPORT (e.g. udf.wasm#trim), got %q", Name, uriOrCode)
	}
	out := &Handler{Timeout: h.Timeout, PoolSize: h.PoolSize, path: uriOrCode[:i], export: uriOrCode[i+1:]}
	wasm, err := os.ReadFile(out.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if out.module, err = compile(wasm, out.Timeout > 0); err != nil {
		return nil, fmt.Errorf("%s: compiling %s: %w", Name, out.path, err)
	}
	exports := out.module.compiled.ExportedFunctions()
	want := map[string][2][]api.ValueType{
		"alloc":    {{api.ValueTypeI32}, {api.ValueTypeI32}},
		out.export: {{api.ValueTypeI32, api.ValueTypeI32}, {api.ValueTypeI64}},
	}
	for name, sig := range want {
		def, ok := exports[name]
		if !ok {
			return nil, fmt.Errorf("%s: %s exports no function %s", Name, out.path, name)
		}
		if !bytes.Equal(def.ParamTypes(), sig[0]) || !bytes.Equal(def.ResultTypes(), sig[1]) {
			return nil, fmt.Errorf("%s: %s's %s has the wrong signature (want %v -> %v)", Name, out.path, name,
				types(sig[0]), types(sig[1]))
		}
	}
	first, err := out.newInstance()
	if err != nil {
		return nil, err
	}
	out.pool = udf.NewPool(out.PoolSize, first, out.newInstance, (*instance).close)
	out.loaded = true
	return out, nil
}

func types(ts []api.ValueType) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return names
}

// instance is one instance of the module and what a call needs.
type instance struct {
	mod       api.Module
	alloc, fn api.Function
	mem       api.Memory
	inPtr     uint32 // the guest's input buffer
	inLen     uint32 // its length (what alloc was last asked for)
	stack     [2]uint64
	text      bytes.Buffer
	enc       *json.Encoder
	stderr    head
}

// head keeps the start of what the guest writes on stderr (a Go panic's message), for error messages.
type head struct{ b []byte }

func (t *head) Write(p []byte) (int, error) {
	if room := 4096 - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// suffix is the first line the guest wrote on stderr, for an error message.
func (t *head) suffix() string {
	first, _, _ := strings.Cut(strings.TrimSpace(string(t.b)), "\n")
	if first == "" {
		return ""
	}
	return " (guest stderr: " + first + ")"
}

func (h *Handler) newInstance() (*instance, error) {
	inst := &instance{}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").
		WithStderr(&inst.stderr).WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader)
	mod, err := h.module.rt.InstantiateModule(context.Background(), h.module.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: instantiating %s: %w%s", Name, h.path, err, inst.stderr.suffix())
	}
	inst.mod, inst.alloc, inst.fn, inst.mem = mod, mod.ExportedFunction("alloc"), mod.ExportedFunction(h.export), mod.Memory()
	if inst.mem == nil {
		_ = mod.Close(context.Background())
		return nil, fmt.Errorf("%s: %s has no memory", Name, h.path)
	}
	inst.enc = json.NewEncoder(&inst.text)
	inst.enc.SetEscapeHTML(false)
	return inst, nil
}

func (inst *instance) close() { _ = inst.mod.Close(context.Background()) }

// get takes an instance from the pool (see udf.Pool).
func (h *Handler) get() (*instance, error) {
	inst, err := h.pool.Get()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return inst, nil
}

// put gives an instance (or nil, for one discarded) back to the pool.
func (h *Handler) put(inst *instance) { h.pool.Put(inst) }

// Close closes the instances in the pool; instances in use are closed when their calls end. The
// compiled module stays, for other handlers of the same bytes.
func (h *Handler) Close() error {
	if h.loaded {
		h.pool.Close()
	}
	return nil
}

// Value passes the row to the export as JSON text and returns the export's result, JSON text.
func (h *Handler) Value(row udf.Row) (any, error) {
	if !h.loaded {
		return nil, fmt.Errorf("%s: Value before Load", Name)
	}
	inst, err := h.get()
	if err != nil {
		return nil, err
	}
	inst.text.Reset()
	if err := inst.enc.Encode(row); err != nil {
		h.put(inst)
		return nil, fmt.Errorf("%s: the row cannot cross into the module: %w", Name, err)
	}
	in := inst.text.Bytes()
	out, err := h.call(inst, in[:len(in)-1]) // without Encode's newline
	if err != nil {
		return nil, err
	}
	return out, nil
}

// call runs the export on JSON text, and puts the instance back (or drops it, if the call failed in a
// way that leaves it closed or unusable).
func (h *Handler) call(inst *instance, in []byte) (string, error) {
	ctx := context.Background()
	if h.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.Timeout)
		defer cancel()
	}
	n := uint32(len(in))
	if len(in) >= failed {
		h.put(inst)
		return "", fmt.Errorf("%s: a row of %d bytes is too long", Name, len(in))
	}
	if inst.inPtr == 0 || n > inst.inLen {
		inst.stack[0] = uint64(n)
		if err := inst.alloc.CallWithStack(ctx, inst.stack[:]); err != nil {
			return "", h.failed(inst, "alloc", err)
		}
		inst.inPtr, inst.inLen = uint32(inst.stack[0]), n
	}
	if !inst.mem.Write(inst.inPtr, in) {
		return "", h.failed(inst, "alloc", errors.New("it returned a buffer outside memory"))
	}
	inst.stack[0], inst.stack[1] = uint64(inst.inPtr), uint64(n)
	if err := inst.fn.CallWithStack(ctx, inst.stack[:]); err != nil {
		return "", h.failed(inst, h.export, err)
	}
	packed := inst.stack[0]
	ptr, length := uint32(packed>>32), uint32(packed)
	isErr := length&failed != 0
	length &^= failed
	b, ok := inst.mem.Read(ptr, length)
	if !ok {
		return "", h.failed(inst, h.export, fmt.Errorf("its result (%d bytes at %#x) is outside memory", length, ptr))
	}
	out := string(b)
	h.put(inst)
	if isErr {
		return "", fmt.Errorf("%s: %s: %s", Name, h.export, out)
	}
	return out, nil
}

// failed drops an instance whose call failed and says why.
func (h *Handler) failed(inst *instance, export string, err error) error {
	inst.close()
	h.put(nil)
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded {
		return fmt.Errorf("%s: %s exceeded %v: %w", Name, export, h.Timeout, ErrTimeout)
	}
	first, _, _ := strings.Cut(err.Error(), "\n") // leave out wazero's wasm stack trace
	return fmt.Errorf("%s: %s: %s%s", Name, export, first, inst.stderr.suffix())
}
