package wasm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

func TestMain(m *testing.M) { udftest.Main(m) }

func load(t testing.TB, export string) *Handler {
	t.Helper()
	guest := udftest.Guest(t)
	h, err := udf.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := h.Load(guest + "#" + export)
	if err != nil {
		t.Fatal(err)
	}
	wh := loaded.(*Handler)
	t.Cleanup(func() { _ = wh.Close() })
	return wh
}

func TestAnswersMatchNative(t *testing.T) {
	guest := udftest.Guest(t)
	udftest.AgreesWithNative(t, New(), func(w string) string { return guest + "#" + w })
	for _, w := range udf.Workloads {
		h := load(t, w)
		native, _ := udf.Native(w)
		for _, size := range udf.Sizes {
			row, err := udf.MakeRow(size)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := native(row)
			for i := 0; i < 3; i++ {
				got, err := h.Value(row)
				if err != nil {
					t.Fatalf("%s/%s: %v", w, size, err)
				}
				if udftest.Canonical(t, got) != udftest.Canonical(t, want) {
					t.Fatalf("%s/%s:\n got %.300s\nwant %.300s", w, size, got, want)
				}
			}
		}
		// Smaller rows after larger ones reuse the guest's buffer.
		small, _ := udf.MakeRow("small")
		want, _ := native(small)
		if got, err := h.Value(small); err != nil || udftest.Canonical(t, got) != udftest.Canonical(t, want) {
			t.Fatalf("%s/small after large: %v %v", w, got, err)
		}
	}
	row := udf.Row{"null": nil, "nul": "a\x00b", "uni": "héllo ✓", "html": "<&>", "arr": []any{nil, 1.5}}
	want, _ := udf.Encode(row)
	if got, err := load(t, "encode").Value(row); err != nil || udftest.Canonical(t, got) != udftest.Canonical(t, want) {
		t.Errorf("awkward values: %v %v", got, err)
	}
}

func TestTimeout(t *testing.T) {
	t.Setenv(TimeoutEnv, "50")
	h := load(t, "spin")
	for i := 0; i < 2; i++ { // the second call runs in a new instance
		start := time.Now()
		_, err := h.Value(udf.Row{"a": 1.0})
		took := time.Since(start)
		t.Logf("%v after %v", err, took.Round(time.Millisecond))
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "exceeded 50ms") {
			t.Fatalf("want a timeout, got %v", err)
		}
		if took > time.Minute { // a bound on "stopped at all", not a speed claim
			t.Errorf("the timeout took %v", took)
		}
	}
	trim := load(t, "trim")
	if _, err := trim.Value(udf.Row{"key1": 1.0, "b": 2.0}); err != nil {
		t.Errorf("with a deadline, a call that ends: %v", err)
	}
}

func TestUnencodableRows(t *testing.T) {
	h := load(t, "encode")
	udftest.RejectsUncrossable(t, h)
	cyclic := udf.Row{}
	cyclic["self"] = cyclic
	rows := map[string]udf.Row{
		"func":    {"f": func() {}},
		"NaN":     {"x": math.NaN()},
		"-Inf":    {"n": []any{math.Inf(-1)}},
		"channel": {"c": make(chan int)},
		"cycle":   cyclic,
	}
	for name, row := range rows {
		if v, err := h.Value(row); err == nil || !strings.Contains(err.Error(), "cannot cross") {
			t.Errorf("%s: want an error, got %.100v %v", name, v, err)
		}
	}
	if _, err := h.Value(udf.Row{"fine": true}); err != nil {
		t.Errorf("after refused rows: %v", err)
	}
}

// TestGuestFailures: an error the guest reports, and a guest that dies, are errors; the handler goes on.
func TestGuestFailures(t *testing.T) {
	h := load(t, "trim")
	inst, err := h.get()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.call(inst, []byte("not json")); err == nil || !strings.Contains(err.Error(), "decoding the row") {
		t.Errorf("text that is not JSON: got %v", err)
	}
	// A guest that panics (a buffer of 4 GiB on wasm32) traps; its instance is dropped.
	inst, _ = h.get()
	inst.stack[0] = 0xffff_fff0
	err = inst.alloc.CallWithStack(context.Background(), inst.stack[:])
	if err == nil {
		t.Fatal("alloc(4 GiB) returned")
	}
	err = h.failed(inst, "alloc", err)
	t.Logf("the guest died: %.300v", err)
	if !strings.Contains(err.Error(), "guest stderr: runtime: out of memory") {
		t.Errorf("want the guest's message, got %v", err)
	}
	if got, err := h.Value(udf.Row{"key1": 1.0, "b": 2.0}); err != nil || got != `{"b":2}` {
		t.Errorf("after the guest died: %v %v", got, err)
	}
}

func TestLoadErrors(t *testing.T) {
	guest := udftest.Guest(t)
	notWasm := filepath.Join(t.TempDir(), "not.wasm")
	if err := os.WriteFile(notWasm, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{guest, guest + "#", guest + "#nosuch", guest + "#alloc", "/no/such.wasm#trim", notWasm + "#trim"} {
		if _, err := New().Load(uri); err == nil {
			t.Errorf("%s loaded", uri)
		}
	}
	if _, err := New().Value(udf.Row{}); err == nil {
		t.Error("Value before Load must be an error")
	}
	t.Setenv(PoolEnv, "none")
	if _, err := New().Load(guest + "#trim"); err == nil || !strings.Contains(err.Error(), PoolEnv) {
		t.Errorf("a malformed %s: got %v", PoolEnv, err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Setenv(PoolEnv, "3")
	// This tests the pool, not deadlines: 8 goroutines on a loaded 2-core machine can take a call past
	// the default 100 ms, which would fail the test for the wrong reason.
	t.Setenv(TimeoutEnv, "0")
	h := load(t, "trim")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row, _ := udf.MakeRow(udf.Sizes[g%2]) // small and medium
			want, _ := udf.Trim(row)
			wantC, _ := udf.Canonical(want)
			for i := 0; i < 50; i++ {
				got, err := h.Value(row)
				if err != nil {
					errs <- err
					return
				}
				if gotC, _ := udf.Canonical(got); gotC != wantC {
					errs <- fmt.Errorf("wrong answer %.100s", gotC)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Value(udf.Row{}); err == nil {
		t.Error("Value after Close must be an error")
	}
}

func BenchmarkWasm(b *testing.B) {
	for _, deadline := range []string{"100", "0"} {
		for _, w := range udf.Workloads {
			for _, size := range udf.Sizes {
				b.Run(fmt.Sprintf("timeout=%sms/%s/%s", deadline, w, size), func(b *testing.B) {
					b.Setenv(TimeoutEnv, deadline)
					h := load(b, w)
					row, _ := udf.MakeRow(size)
					b.ReportAllocs()
					for b.Loop() {
						if _, err := h.Value(row); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
