// Package yaegi is the mechanism "yaegi": the user's code is Go source, interpreted by yaegi (a Go
// interpreter written in Go) with the standard library's symbols available (encoding/json and so on,
// which then run as compiled code). The user's function is looked up once, at Load, as a Go func value
// that calls into the interpreter.
//
// Unlike the Lua mechanisms there is no deadline: yaegi cannot stop a call to an interpreted
// function, so a function that never returns hangs Value (as it would in a plugin). Load, which runs
// the source's top-level declarations, has a deadline (LoadTimeout).
package yaegi

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"bridgebench/udftrim/udf"
)

// Name is the mechanism name.
const Name = "yaegi"

// LoadTimeout bounds the evaluation of the source at Load.
const LoadTimeout = 10 * time.Second

func init() { udf.Register(Name, func() udf.Handler { return &Handler{} }) }

// Func is the type of the user's function (udf.Row is map[string]any).
type Func = func(map[string]any) (any, error)

// Handler calls an interpreted Go function.
type Handler struct {
	name string // file name (or "inline.go") and function, for errors
	fn   Func
}

// Load takes "SOURCE#Function": SOURCE is the path of a Go source file (one package, any name, that
// imports only the standard library), or the source itself (text with a newline in it); Function
// names a func(map[string]any) (any, error) of it.
func (h *Handler) Load(uriOrCode string) (_ udf.Handler, err error) {
	i := strings.LastIndexByte(uriOrCode, '#')
	if i < 0 || !token.IsIdentifier(uriOrCode[i+1:]) {
		return nil, fmt.Errorf("%s: want SOURCE#Function, got %.80q", Name, uriOrCode)
	}
	source, function := uriOrCode[:i], uriOrCode[i+1:]
	name := "inline.go"
	if !strings.Contains(source, "\n") {
		text, err := os.ReadFile(source)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		name, source = filepath.Base(source), string(text)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %s: the interpreter panicked: %v", Name, name, r)
		}
	}()
	file, err := parser.ParseFile(token.NewFileSet(), name, source, parser.PackageClauseOnly)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	// What the user's code prints goes to stderr: stdout carries the probe's result.
	in := interp.New(interp.Options{Stdout: os.Stderr})
	if err := in.Use(stdlib.Symbols); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), LoadTimeout)
	defer cancel()
	if _, err := in.EvalWithContext(ctx, source); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: %s: evaluating the source took more than %v", Name, name, LoadTimeout)
		}
		return nil, fmt.Errorf("%s: %s: %w", Name, name, err)
	}
	v, err := in.Eval(file.Name.Name + "." + function)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", Name, name, err)
	}
	fn, ok := v.Interface().(Func)
	if !ok {
		return nil, fmt.Errorf("%s: %s: %s is a %s, want a func(map[string]any) (any, error)", Name, name, function, v.Type())
	}
	return &Handler{name: name + "#" + function, fn: fn}, nil
}

// String names the mechanism.
func (h *Handler) String() string { return Name }

// Value calls the interpreted function on the row. A panic in the user's code (or the interpreter)
// is returned as an error.
func (h *Handler) Value(row udf.Row) (v any, err error) {
	if h.fn == nil {
		return nil, fmt.Errorf("%s: Value before Load", Name)
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%s: panic in %s: %v", Name, h.name, r)
		}
	}()
	return h.fn(row)
}
