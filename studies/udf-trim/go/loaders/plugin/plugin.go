// Package plugin is the mechanism "plugin": the user's code is a Go plugin (a .so built with
// -buildmode=plugin, see ../../plugins/udf), opened with the standard library's plugin package, and the
// user's function is looked up once, at Load, and then called directly — Talaria's plugin loader.
//
// Go plugins need cgo and Linux (or macOS/FreeBSD), and the plugin must be built by the same toolchain
// from the same source of every package it shares with the host.
package plugin

import (
	"fmt"
	goplugin "plugin"
	"strings"

	"bridgebench/udftrim/udf"
)

// Name is the mechanism name.
const Name = "plugin"

func init() { udf.Register(Name, func() udf.Handler { return &Handler{} }) }

// Func is the type of the functions a plugin exports (udf.Row is map[string]any).
type Func = func(map[string]any) (any, error)

// Handler calls a function of a Go plugin.
type Handler struct {
	source string
	fn     Func
}

// Load takes "path/to/udf.so#Symbol": it opens the plugin and looks up Symbol, an exported function
// (or a variable holding one) of type func(map[string]any) (any, error).
func (h *Handler) Load(uri string) (udf.Handler, error) {
	i := strings.LastIndexByte(uri, '#')
	if i <= 0 || i == len(uri)-1 {
		return nil, fmt.Errorf("%s: want path/to/udf.so#Function, got %q", Name, uri)
	}
	path, symbol := uri[:i], uri[i+1:]
	p, err := goplugin.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	sym, err := p.Lookup(symbol)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", Name, path, err)
	}
	var fn Func
	switch f := sym.(type) {
	case Func:
		fn = f
	case *Func:
		fn = *f
	}
	if fn == nil {
		return nil, fmt.Errorf("%s: %s: %s is a %T, want a func(map[string]any) (any, error)", Name, path, symbol, sym)
	}
	return &Handler{source: uri, fn: fn}, nil
}

// String names the mechanism.
func (h *Handler) String() string { return Name }

// Value calls the plugin's function on the row. A panic in the user's code is returned as an error.
func (h *Handler) Value(row udf.Row) (v any, err error) {
	if h.fn == nil {
		return nil, fmt.Errorf("%s: Value before Load", Name)
	}
	defer recoverTo(&err, h.source)
	return h.fn(row)
}

func recoverTo(err *error, source string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: panic in %s: %v", Name, source, r)
	}
}
