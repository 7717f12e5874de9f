// Package contracttest checks a mechanism's plugin against the contract's reference functions, for the
// tests of the loaders and of cmd/callbench.
package contracttest

import (
	"bytes"
	"sort"
	"testing"

	"bridgebench/plugincall/contract"
)

// Ints are the inputs the int shape is checked on: zero, small, large, negative and the extremes.
var Ints = []int64{0, 1, 2, 12345, 1 << 31, 1<<32 + 7, -1, -987654321, 1<<63 - 1, -1 << 63}

// Check calls p.Int on each of Ints and p.Bytes on the payload of each size in contract.Payloads (each
// twice, so a mechanism's reused buffers are exercised), failing t where a result differs from
// contract.IntFunc or contract.BytesFunc.
func Check(t testing.TB, p contract.Plugin) {
	t.Helper()
	for _, x := range Ints {
		got, err := p.Int(x)
		if err != nil {
			t.Errorf("Int(%d): %v", x, err)
			continue
		}
		if want := contract.IntFunc(x); got != want {
			t.Errorf("Int(%d) = %d, want %d", x, got, want)
		}
	}
	names := make([]string, 0, len(contract.Payloads))
	for name := range contract.Payloads {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return contract.Payloads[names[i]] < contract.Payloads[names[j]] })
	for round := 0; round < 2; round++ {
		for _, name := range names {
			in := contract.Payload(contract.Payloads[name])
			orig := bytes.Clone(in)
			got, err := p.Bytes(in)
			if err != nil {
				t.Errorf("Bytes(%s): %v", name, err)
				continue
			}
			if want := contract.BytesFunc(orig); !bytes.Equal(got, want) {
				t.Errorf("Bytes(%s): %d bytes, differ from BytesFunc's %d", name, len(got), len(want))
			}
			if !bytes.Equal(in, orig) {
				t.Errorf("Bytes(%s) changed its input", name)
			}
		}
	}
}
