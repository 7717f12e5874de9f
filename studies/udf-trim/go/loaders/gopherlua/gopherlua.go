// Package gopherlua runs Lua user scripts on gopher-lua (a Lua 5.1 VM written in Go), in Talaria's
// shape: the script defines main(input), input is the row as JSON text, and main returns JSON text.
// The script gets a json module written in Go (see json.go).
//
// Two mechanisms:
//
//	gopherlua-fresh   a new VM per Value call that compiles and runs the script, then calls main
//	                  (the seed's first Lua benchmark);
//	gopherlua-pooled  the script compiled once to a FunctionProto at Load; a sync.Pool of VMs that
//	                  have run it (the seed's "cache the Lua VM and reuse them").
//
// Each Value call runs under a deadline, DefaultTimeout (100 ms, as Talaria's) unless the environment
// variable UDF_TIMEOUT_MS says otherwise (0: no deadline). A script that runs past it is stopped, and
// Value returns "lua: script exceeded 100ms (name.lua)"; a script error is returned with the script's
// name and line. With a deadline, gopher-lua checks it at every VM instruction: that cost is part of
// what Talaria paid, and UDF_TIMEOUT_MS=0 measures without it.
package gopherlua

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"bridgebench/udftrim/udf"
)

// Mechanism names.
const (
	NameFresh  = "gopherlua-fresh"
	NamePooled = "gopherlua-pooled"
)

// DefaultTimeout is the deadline of one Value call when UDF_TIMEOUT_MS is not set.
const DefaultTimeout = 100 * time.Millisecond

// TimeoutEnv names the environment variable that sets the deadline in milliseconds (0: none).
const TimeoutEnv = "UDF_TIMEOUT_MS"

// Mode says whether each Value call gets a fresh VM or one from a pool.
type Mode int

// The modes.
const (
	Fresh Mode = iota
	Pooled
)

// String names a mode by its mechanism.
func (m Mode) String() string { return (&Handler{mode: m}).String() }

func init() {
	udf.Register(NameFresh, func() udf.Handler { return New(Fresh) })
	udf.Register(NamePooled, func() udf.Handler { return New(Pooled) })
}

// Handler is an unloaded or loaded gopher-lua handler.
type Handler struct {
	// Timeout is the deadline of one Value call; 0 or less means none. New sets it from
	// UDF_TIMEOUT_MS or DefaultTimeout; change it before Load.
	Timeout time.Duration

	mode   Mode
	envErr error

	name   string             // the chunk name in error messages: the script's file name, or "inline.lua"
	source string             // the script (fresh: compiled at every call)
	proto  *lua.FunctionProto // the compiled script (pooled)
	pool   *sync.Pool         // of *vm (pooled)
	loaded bool
}

type vm struct {
	L    *lua.LState
	main *lua.LFunction
}

// New returns an unloaded handler of a mode, its Timeout taken from UDF_TIMEOUT_MS (unset or empty:
// DefaultTimeout). A malformed UDF_TIMEOUT_MS is reported by Load.
func New(mode Mode) *Handler {
	h := &Handler{mode: mode, Timeout: DefaultTimeout}
	if s := os.Getenv(TimeoutEnv); strings.TrimSpace(s) != "" {
		ms, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || ms < 0 {
			h.envErr = fmt.Errorf("%s=%q: want a number of milliseconds, 0 for none", TimeoutEnv, s)
		}
		h.Timeout = time.Duration(ms) * time.Millisecond
	}
	return h
}

// String names the mechanism.
func (h *Handler) String() string {
	if h.mode == Pooled {
		return NamePooled
	}
	return NameFresh
}

// Load takes the path of a Lua script, or the script itself (text with a newline in it). It compiles
// the script and runs it once in a VM (under the deadline), which must define a global function main:
// errors show at Load.
func (h *Handler) Load(uriOrCode string) (udf.Handler, error) {
	if h.envErr != nil {
		return nil, fmt.Errorf("%s: %w", h, h.envErr)
	}
	out := &Handler{Timeout: h.Timeout, mode: h.mode, name: "inline.lua", source: uriOrCode}
	if !strings.Contains(uriOrCode, "\n") {
		text, err := os.ReadFile(uriOrCode)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h, err)
		}
		out.name, out.source = filepath.Base(uriOrCode), string(text)
	}
	if out.mode == Pooled {
		chunk, err := parse.Parse(strings.NewReader(out.source), out.name)
		if err != nil {
			return nil, fmt.Errorf("lua: %v", err)
		}
		if out.proto, err = lua.Compile(chunk, out.name); err != nil {
			return nil, fmt.Errorf("lua: %v", err)
		}
		out.pool = &sync.Pool{}
	}
	ctx, cancel := out.deadline()
	defer cancel()
	first, err := out.start(ctx)
	if err != nil {
		return nil, err
	}
	if ctx != nil {
		first.L.RemoveContext()
	}
	if out.mode == Pooled {
		out.pool.Put(first)
	} else {
		first.L.Close()
	}
	out.loaded = true
	return out, nil
}

// start makes a VM (with the json module) and runs the script's chunk in it, under ctx if not nil.
func (h *Handler) start(ctx context.Context) (*vm, error) {
	L := lua.NewState()
	L.PreloadModule("json", openJSON)
	if ctx != nil {
		L.SetContext(ctx)
	}
	var chunk *lua.LFunction
	if h.proto != nil {
		chunk = L.NewFunctionFromProto(h.proto)
	} else {
		var err error
		if chunk, err = L.Load(strings.NewReader(h.source), h.name); err != nil {
			L.Close()
			return nil, h.luaError(ctx, err)
		}
	}
	L.Push(chunk)
	if err := L.PCall(0, 0, nil); err != nil {
		L.Close()
		return nil, h.luaError(ctx, err)
	}
	main, ok := L.GetGlobal("main").(*lua.LFunction)
	if !ok {
		L.Close()
		return nil, fmt.Errorf("lua: %s defines no function main", h.name)
	}
	return &vm{L: L, main: main}, nil
}

// Value passes the row to main as JSON text and returns main's result, a string.
func (h *Handler) Value(row udf.Row) (result any, err error) {
	if !h.loaded {
		return nil, fmt.Errorf("%s: Value before Load", h)
	}
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("lua: %s: panic: %v", h.name, r)
		}
	}()
	input, err := udf.Marshal(row)
	if err != nil {
		return nil, fmt.Errorf("%s: the row cannot cross into Lua: %w", h, err)
	}
	ctx, cancel := h.deadline()
	defer cancel()
	if h.mode == Fresh {
		v, err := h.start(ctx)
		if err != nil {
			return nil, err
		}
		defer v.L.Close()
		return h.call(ctx, v, input)
	}
	v, _ := h.pool.Get().(*vm)
	if v == nil {
		if v, err = h.start(nil); err != nil {
			return nil, err
		}
	}
	if ctx != nil {
		v.L.SetContext(ctx)
	}
	result, err = h.call(ctx, v, input)
	if err != nil {
		v.L.Close() // a VM stopped part-way is not reused
		return nil, err
	}
	if ctx != nil {
		v.L.RemoveContext()
	}
	h.pool.Put(v)
	return result, nil
}

// deadline gives the context of one call: nil (and a no-op cancel) when there is no timeout.
func (h *Handler) deadline() (context.Context, context.CancelFunc) {
	if h.Timeout <= 0 {
		return nil, func() {}
	}
	return context.WithTimeout(context.Background(), h.Timeout)
}

func (h *Handler) call(ctx context.Context, v *vm, input []byte) (any, error) {
	L := v.L
	if err := L.CallByParam(lua.P{Fn: v.main, NRet: 1, Protect: true}, lua.LString(input)); err != nil {
		return nil, h.luaError(ctx, err)
	}
	ret := L.Get(-1)
	L.Pop(1)
	s, ok := ret.(lua.LString)
	if !ok {
		return nil, fmt.Errorf("lua: %s: main returned a %s, want a string", h.name, ret.Type())
	}
	return string(s), nil
}

// luaError turns a gopher-lua error into one line naming the script (and the line, when Lua gives it).
func (h *Handler) luaError(ctx context.Context, err error) error {
	if ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("lua: script exceeded %v (%s)", h.Timeout, h.name)
	}
	msg := err.Error()
	var api *lua.ApiError
	if errors.As(err, &api) && api.Object != nil {
		msg = api.Object.String()
	}
	if !strings.HasPrefix(msg, h.name) {
		msg = h.name + ": " + msg
	}
	return fmt.Errorf("lua: %s", msg)
}
