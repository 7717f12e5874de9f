//go:build (luajit || lua54) && !(luajit && lua54)

package luavm

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"bridgebench/udftrim/udf"
)

// Crossing is how the row crosses into Lua.
type Crossing int

// The crossings (see the package comment).
const (
	JSON  Crossing = iota // the row as JSON text, entry point main(input)
	Table                 // the row as a Lua table, entry point main_table(row)
)

// Name is the mechanism name of a crossing on this binary's VM: luajit-json, lua54-table…
func (c Crossing) Name() string {
	if c == Table {
		return Flavour + "-table"
	}
	return Flavour + "-json"
}

// Entry is the global function a script of the crossing must define.
func (c Crossing) Entry() string {
	if c == Table {
		return "main_table"
	}
	return "main"
}

// Environment variables and defaults.
const (
	TimeoutEnv = "UDF_TIMEOUT_MS" // deadline per call in milliseconds, 0: none
	PoolEnv    = "UDF_LUA_POOL"   // most lua_States a handler keeps (default GOMAXPROCS)
	CPathEnv   = "UDF_LUA_CPATH"  // package.cpath for finding cjson (default: Debian's, see DefaultCPath)
	JITEnv     = "UDF_LUAJIT_JIT" // "on": LuaJIT keeps its JIT with a deadline (compiled loops then cannot be stopped)

	DefaultTimeout = 100 * time.Millisecond
	// HookCount is how many VM instructions run between two deadline checks (a clock read each).
	HookCount = 10000
)

// ErrTimeout is wrapped by the error of a call that ran past its deadline.
var ErrTimeout = errors.New("deadline passed")

// DefaultCPath is where Debian's lua-cjson puts cjson.so for this VM (then /usr/local's).
func DefaultCPath() string {
	arch := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu",
		"386": "i386-linux-gnu", "ppc64le": "powerpc64le-linux-gnu", "s390x": "s390x-linux-gnu",
		"riscv64": "riscv64-linux-gnu"}[runtime.GOARCH]
	return "/usr/lib/" + arch + "/lua/" + luaVersion + "/?.so;/usr/local/lib/lua/" + luaVersion + "/?.so"
}

// Handler is an unloaded or loaded handler of one crossing. A loaded handler's Value may be called
// from many goroutines at once.
type Handler struct {
	// Timeout is the deadline of one call (and of running the script at Load); 0: none. From
	// UDF_TIMEOUT_MS, else DefaultTimeout. Change before Load.
	Timeout time.Duration
	// PoolSize is the most states the handler keeps; from UDF_LUA_POOL, else GOMAXPROCS.
	PoolSize int
	// CPath is package.cpath in every state; from UDF_LUA_CPATH, else DefaultCPath().
	CPath string
	// JIT: LuaJIT's JIT compiler on although a deadline is in force (UDF_LUAJIT_JIT=on). Without a
	// deadline the JIT is always on. Ignored by Lua 5.4.
	JIT bool

	crossing Crossing
	envErr   error

	name   string // the script's file name, for messages
	code   string
	pool   *udf.Pool[state]
	loaded bool
}

type state struct {
	vm   *C.bb_vm
	text bytes.Buffer // the JSON crossing's input
	enc  *json.Encoder
	buf  []byte // the table crossing's input
}

// New returns an unloaded handler of a crossing, configured from the environment. A malformed
// variable is reported by Load.
func New(c Crossing) *Handler {
	h := &Handler{crossing: c, Timeout: DefaultTimeout, PoolSize: runtime.GOMAXPROCS(0), CPath: DefaultCPath()}
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
			h.envErr = fmt.Errorf("%s=%q: want a number of states, at least 1", PoolEnv, s)
		}
		h.PoolSize = n
	}
	if s := os.Getenv(CPathEnv); s != "" {
		h.CPath = s
	}
	switch s := strings.TrimSpace(os.Getenv(JITEnv)); s {
	case "", "off", "0":
	case "on", "1":
		h.JIT = true
	default:
		h.envErr = fmt.Errorf("%s=%q: want on or off", JITEnv, s)
	}
	return h
}

// String names the mechanism.
func (h *Handler) String() string { return h.crossing.Name() }

// Load takes the path of a Lua script, or the script itself (text with a newline in it). It makes one
// state and runs the script in it (under the deadline): the script must define the crossing's entry
// point, main or main_table. More states are made as concurrent calls need them.
func (h *Handler) Load(uriOrCode string) (udf.Handler, error) {
	if h.envErr != nil {
		return nil, fmt.Errorf("%s: %w", h, h.envErr)
	}
	if h.PoolSize < 1 {
		return nil, fmt.Errorf("%s: PoolSize %d, want at least 1", h, h.PoolSize)
	}
	out := &Handler{Timeout: h.Timeout, PoolSize: h.PoolSize, CPath: h.CPath, JIT: h.JIT,
		crossing: h.crossing, name: "inline.lua", code: uriOrCode}
	if !strings.Contains(uriOrCode, "\n") {
		text, err := os.ReadFile(uriOrCode)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h, err)
		}
		out.name, out.code = filepath.Base(uriOrCode), string(text)
	}
	if out.code == "" {
		return nil, fmt.Errorf("%s: %s is empty", h, out.name)
	}
	first, err := out.newState()
	if err != nil {
		return nil, err
	}
	out.pool = udf.NewPool(out.PoolSize, first, out.newState, (*state).close)
	out.loaded = true
	return out, nil
}

// jitOn says whether LuaJIT's compiler stays on in this handler's states.
func (h *Handler) jitOn() bool { return h.Timeout <= 0 || h.JIT }

func (h *Handler) hookCount() C.int {
	if h.Timeout <= 0 {
		return 0
	}
	return HookCount
}

// cstr is a Go string's bytes for the duration of one cgo call (s must not be empty).
func cstr(s string) *C.char { return (*C.char)(unsafe.Pointer(unsafe.StringData(s))) }

// newState opens a state and runs the script in it.
func (h *Handler) newState() (*state, error) {
	if h.CPath == "" {
		return nil, fmt.Errorf("%s: empty package.cpath", h)
	}
	jit := C.int(0)
	if h.jitOn() {
		jit = 1
	}
	var status C.int
	vm := C.bb_open(cstr(h.CPath), C.size_t(len(h.CPath)), jit, h.hookCount(), &status)
	if vm == nil {
		return nil, fmt.Errorf("%s: cannot make a Lua state (out of memory?)", h)
	}
	st := &state{vm: vm}
	if status != C.BB_OK {
		msg := st.message()
		st.close()
		if strings.Contains(msg, "cjson") {
			msg += "\n(the json module is lua-cjson: install Debian's lua-cjson, or set " + CPathEnv + ")"
		}
		return nil, fmt.Errorf("%s: setting up the Lua state: %s", h, msg)
	}
	chunk := C.CString("@" + h.name)
	defer C.free(unsafe.Pointer(chunk))
	entry := C.CString(h.crossing.Entry())
	defer C.free(unsafe.Pointer(entry))
	rc := C.bb_load(vm, cstr(h.code), C.size_t(len(h.code)), chunk, entry, C.int64_t(h.Timeout))
	if rc != C.BB_OK {
		msg := st.message()
		st.close()
		if rc == C.BB_TIMEOUT {
			return nil, fmt.Errorf("%s: running %s took longer than %v: %w", h, h.name, h.Timeout, ErrTimeout)
		}
		return nil, fmt.Errorf("%s: loading %s: %s", h, h.name, msg)
	}
	st.enc = json.NewEncoder(&st.text)
	st.enc.SetEscapeHTML(false)
	return st, nil
}

// message is the state's last result or message, copied.
func (st *state) message() string { return C.GoStringN(st.vm.out, C.int(st.vm.outlen)) }

func (st *state) close() {
	C.bb_close(st.vm)
	st.vm = nil
}

// get takes a state from the pool (see udf.Pool).
func (h *Handler) get() (*state, error) {
	st, err := h.pool.Get()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	return st, nil
}

// put gives a state (or nil, for one discarded) back to the pool.
func (h *Handler) put(st *state) { h.pool.Put(st) }

// Close closes the states in the pool; states in use are closed when their calls end.
func (h *Handler) Close() error {
	if h.loaded {
		h.pool.Close()
	}
	return nil
}

// Value calls the script's entry point with the row and returns its result, JSON text (a string).
func (h *Handler) Value(row udf.Row) (any, error) {
	if !h.loaded {
		return nil, fmt.Errorf("%s: Value before Load", h)
	}
	st, err := h.get()
	if err != nil {
		return nil, err
	}
	var rc C.int
	switch h.crossing {
	case JSON:
		st.text.Reset()
		if err := st.enc.Encode(row); err != nil {
			h.put(st)
			return nil, fmt.Errorf("%s: the row cannot cross into Lua: %w", h, err)
		}
		in := st.text.Bytes()
		in = in[:len(in)-1] // Encode's newline
		rc = C.bb_call_text(st.vm, (*C.char)(unsafe.Pointer(unsafe.SliceData(in))), C.size_t(len(in)), C.int64_t(h.Timeout))
	case Table:
		if st.buf, err = appendValue(st.buf[:0], row, 0); err != nil {
			h.put(st)
			return nil, fmt.Errorf("%s: the row cannot cross into Lua: %w", h, err)
		}
		rc = C.bb_call_table(st.vm, (*C.char)(unsafe.Pointer(unsafe.SliceData(st.buf))), C.size_t(len(st.buf)), C.int64_t(h.Timeout))
	}
	msg := st.message()
	switch rc {
	case C.BB_OK:
		h.put(st)
		return msg, nil
	case C.BB_TIMEOUT, C.BB_MEM:
		// A state stopped in the middle of the script is not trusted again.
		st.close()
		h.put(nil)
		if rc == C.BB_MEM {
			return nil, fmt.Errorf("%s: %s: out of memory: %s", h, h.name, msg)
		}
		where, _, _ := strings.Cut(msg, "\n")
		where, _, _ = strings.Cut(where, " udf: deadline passed")
		return nil, fmt.Errorf("%s: script exceeded %v (%s): %w", h, h.Timeout, strings.TrimSuffix(where, ":"), ErrTimeout)
	case C.BB_BADRESULT:
		h.put(st)
		return nil, fmt.Errorf("%s: %s returned a %s, want a string (JSON text)", h, h.crossing.Entry(), msg)
	default:
		h.put(st)
		return nil, fmt.Errorf("%s: %s", h, msg)
	}
}

// MaxDepth is how deeply nested a row may be to cross as a table.
const MaxDepth = 100

// appendValue appends v in the table crossing's encoding, which bridge.c's bb_push_value reads:
//
//	'N' nil · 'T' true · 'F' false · 'D' float64 (8 bytes, native order) · 'S' u32 length, bytes ·
//	'A' u32 count, values · 'O' u32 count, then count × (u32 key length, key bytes, value)
//
// Numbers cross as Lua numbers (doubles); anything else (funcs, channels, NaN, ±Inf) is an error.
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return b, fmt.Errorf("nested deeper than %d", MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(b, 'N'), nil
	case bool:
		if x {
			return append(b, 'T'), nil
		}
		return append(b, 'F'), nil
	case string:
		if len(x) > math.MaxUint32 {
			return b, errors.New("string longer than 4 GiB")
		}
		b = binary.NativeEndian.AppendUint32(append(b, 'S'), uint32(len(x)))
		return append(b, x...), nil
	case float64:
		return appendNumber(b, x)
	case float32:
		return appendNumber(b, float64(x))
	case int:
		return appendNumber(b, float64(x))
	case int64:
		return appendNumber(b, float64(x))
	case int32:
		return appendNumber(b, float64(x))
	case uint:
		return appendNumber(b, float64(x))
	case uint64:
		return appendNumber(b, float64(x))
	case uint32:
		return appendNumber(b, float64(x))
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return b, err
		}
		return appendNumber(b, f)
	case []any:
		b = binary.NativeEndian.AppendUint32(append(b, 'A'), uint32(len(x)))
		for i, e := range x {
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return b, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return b, nil
	case map[string]any:
		b = binary.NativeEndian.AppendUint32(append(b, 'O'), uint32(len(x)))
		for k, e := range x {
			b = binary.NativeEndian.AppendUint32(b, uint32(len(k)))
			b = append(b, k...)
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return b, fmt.Errorf("%q: %w", k, err)
			}
		}
		return b, nil
	}
	return b, fmt.Errorf("a %T cannot cross into Lua", v)
}

func appendNumber(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("%v has no JSON form", f)
	}
	return binary.NativeEndian.AppendUint64(append(b, 'D'), math.Float64bits(f)), nil
}
