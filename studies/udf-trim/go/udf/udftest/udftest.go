// Package udftest holds the checks every loader's tests run: the loader's answers against the native
// Go functions, and rows that cannot cross into a mechanism.
package udftest

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"bridgebench/udftrim/udf"
)

// Source gives the uriOrCode a loader's Load takes for a workload ("trim" or "encode").
type Source func(workload string) string

// AgreesWithNative loads h once per workload and checks that Value gives, for every row size, the
// same canonical answer as the native Go function.
func AgreesWithNative(t *testing.T, h udf.Handler, source Source) {
	t.Helper()
	for _, workload := range udf.Workloads {
		native, err := udf.Native(workload)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := h.Load(source(workload))
		if err != nil {
			t.Fatalf("%s: Load(%q): %v", h, source(workload), err)
		}
		for _, size := range udf.Sizes {
			row, err := udf.MakeRow(size)
			if err != nil {
				t.Fatal(err)
			}
			want, err := answer(native(row))
			if err != nil {
				t.Fatalf("native %s/%s: %v", workload, size, err)
			}
			got, err := answer(Call(loaded, row))
			if err != nil {
				t.Errorf("%s %s/%s: %v", loaded, workload, size, err)
				continue
			}
			if got != want {
				t.Errorf("%s %s/%s: answer differs from native\n got: %.300s\nwant: %.300s", loaded, workload, size, got, want)
			}
		}
	}
}

func answer(v any, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return udf.Canonical(v)
}

const panicked = "Value panicked"

// Call calls h.Value and turns a panic into an error, so a test reports it instead of dying.
func Call(h udf.Handler, row udf.Row) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%s: %v", panicked, r)
		}
	}()
	return h.Value(row)
}

// UncrossableRows are rows that JSON (and so every mechanism) cannot carry: a Go func, a channel, NaN,
// an infinity, a complex number, a func nested in an array, and a map that contains itself.
func UncrossableRows() map[string]udf.Row {
	cyclic := udf.Row{"event": "loop"}
	cyclic["self"] = cyclic
	return map[string]udf.Row{
		"func":        {"event": "x", "key1": 1.0, "f": func() {}},
		"channel":     {"event": "x", "c": make(chan int)},
		"NaN":         {"event": "x", "fare": math.NaN()},
		"+Inf":        {"event": "x", "fare": math.Inf(1)},
		"complex":     {"event": "x", "z": complex(1, 2)},
		"nested func": {"event": "x", "tags": []any{"a", map[string]any{"f": func() {}}}},
		"cycle":       cyclic,
	}
}

// RejectsUncrossable checks that Value gives an error, and does not panic, for every row of
// UncrossableRows. loaded must be a loaded handler.
func RejectsUncrossable(t *testing.T, loaded udf.Handler) {
	t.Helper()
	for name, row := range UncrossableRows() {
		v, err := Call(loaded, row)
		if err == nil {
			t.Errorf("%s: a row with %s gave %v, want an error", loaded, name, v)
		} else if strings.HasPrefix(err.Error(), panicked) {
			t.Errorf("%s: a row with %s: %v", loaded, name, err)
		}
	}
}

// Canonical is udf.Canonical for tests: it fails the test if v is not JSON.
func Canonical(t testing.TB, v any) string {
	t.Helper()
	s, err := udf.Canonical(v)
	if err != nil {
		t.Fatalf("%v (%.200v)", err, v)
	}
	return s
}
