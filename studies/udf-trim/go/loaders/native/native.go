// Package native is the baseline mechanism "native": the workload is a Go function compiled into the
// host (udf.Trim, udf.Encode), called directly.
package native

import (
	"fmt"

	"bridgebench/udftrim/udf"
)

// Name is the mechanism name.
const Name = "native"

func init() { udf.Register(Name, func() udf.Handler { return &Handler{} }) }

// Handler calls a workload's Go function.
type Handler struct {
	workload string
	fn       func(udf.Row) (any, error)
}

// Load takes a workload name, "trim" or "encode".
func (h *Handler) Load(workload string) (udf.Handler, error) {
	fn, err := udf.Native(workload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Handler{workload: workload, fn: fn}, nil
}

// String names the mechanism.
func (h *Handler) String() string { return Name }

// Value calls the workload's function on the row.
func (h *Handler) Value(row udf.Row) (v any, err error) {
	if h.fn == nil {
		return nil, fmt.Errorf("%s: Value before Load", Name)
	}
	defer recoverTo(&err)
	return h.fn(row)
}

func recoverTo(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: panic: %v", Name, r)
	}
}
