package gopherlua

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

func TestMain(m *testing.M) { udftest.Main(m) }

const scripts = "../../../scripts"

func script(workload string) string { return filepath.Join(scripts, workload+".lua") }

func modes() []Mode { return []Mode{Fresh, Pooled} }

func TestAgreesWithNative(t *testing.T) {
	for _, name := range []string{NameFresh, NamePooled} {
		t.Run(name, func(t *testing.T) {
			h, err := udf.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if h.String() != name {
				t.Errorf("String() = %q, want %q", h, name)
			}
			udftest.AgreesWithNative(t, h, script)
		})
	}
}

func TestPooledVMsAreReused(t *testing.T) {
	h, err := New(Pooled).Load(script("trim"))
	if err != nil {
		t.Fatal(err)
	}
	row, _ := udf.MakeRow("small")
	want, _ := udf.Trim(row)
	for i := 0; i < 100; i++ {
		got, err := h.Value(row)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := udf.Canonical(got)
		b, _ := udf.Canonical(want)
		if a != b {
			t.Fatalf("call %d: %s, want %s", i, a, b)
		}
	}
}

func TestUncrossableRows(t *testing.T) {
	for _, m := range modes() {
		h, err := New(m).Load(script("encode"))
		if err != nil {
			t.Fatal(err)
		}
		udftest.RejectsUncrossable(t, h)
	}
}

// load loads inline Lua code (it must contain a newline) with a mode.
func load(t *testing.T, m Mode, code string) udf.Handler {
	t.Helper()
	h, err := New(m).Load(code)
	if err != nil {
		t.Fatalf("%v: %v", m, err)
	}
	return h
}

func TestScriptErrorNamesScriptAndLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boom.lua")
	code := "local json = require(\"json\")\nfunction main(input)\n  local t = nil\n  return t.field\nend\n"
	if err := os.WriteFile(path, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range modes() {
		h, err := New(m).Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ { // the pooled handler replaces the VM that failed
			_, err = h.Value(udf.Row{"a": 1.0})
			if err == nil || !strings.Contains(err.Error(), "boom.lua:4") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: error %q, want one line naming boom.lua:4", h, err)
			}
		}
	}
}

func TestDecodeErrorIsAnError(t *testing.T) {
	for _, m := range modes() {
		h := load(t, m, "local json = require('json')\nfunction main(input) return json.encode(json.decode(input .. '}')) end")
		_, err := h.Value(udf.Row{"a": 1.0})
		if err == nil || !strings.Contains(err.Error(), "json.decode") {
			t.Errorf("%v: error %v, want a json.decode error", h, err)
		}
	}
}

// valueWithin calls Value in a goroutine and fails the test if it has not returned within limit (a
// hang would otherwise stop the whole test binary).
func valueWithin(t *testing.T, h udf.Handler, limit time.Duration) (time.Duration, error) {
	t.Helper()
	type result struct {
		err     error
		elapsed time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		_, err := udftest.Call(h, udf.Row{"a": 1.0})
		done <- result{err, time.Since(start)}
	}()
	select {
	case r := <-done:
		return r.elapsed, r.err
	case <-time.After(limit):
		t.Fatalf("%v: Value did not return within %v", h, limit)
	}
	return 0, nil
}

func TestEndlessLoopIsStopped(t *testing.T) {
	t.Setenv(TimeoutEnv, "")
	for _, m := range modes() {
		h := load(t, m, "function main(input)\n  local n = 0\n  while true do n = n + 1 end\nend\n")
		for i := 0; i < 2; i++ {
			elapsed, err := valueWithin(t, h, 10*time.Second)
			if err == nil || !strings.Contains(err.Error(), "lua: script exceeded 100ms") {
				t.Errorf("%v: error %v, want a timeout", h, err)
			}
			t.Logf("%v: stopped after %v: %v", h, elapsed, err)
		}
	}
}

func TestEndlessLoopAtLoadIsStopped(t *testing.T) {
	t.Setenv(TimeoutEnv, "50")
	for _, m := range modes() {
		done := make(chan error, 1)
		go func() {
			_, err := New(m).Load("while true do end\nfunction main(input) return input end\n")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "exceeded 50ms") {
				t.Errorf("%v: Load error %v, want a timeout", m, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: Load did not return", m)
		}
	}
}

func TestTimeoutFromEnvironment(t *testing.T) {
	t.Setenv(TimeoutEnv, "20")
	if h := New(Pooled); h.Timeout != 20*time.Millisecond {
		t.Errorf("Timeout = %v, want 20ms", h.Timeout)
	}
	t.Setenv(TimeoutEnv, "0")
	h := New(Pooled)
	if h.Timeout != 0 {
		t.Errorf("Timeout = %v, want none", h.Timeout)
	}
	udftest.AgreesWithNative(t, h, script)
	t.Setenv(TimeoutEnv, "soon")
	if _, err := New(Fresh).Load(script("trim")); err == nil || !strings.Contains(err.Error(), TimeoutEnv) {
		t.Errorf("a bad %s must be a Load error, got %v", TimeoutEnv, err)
	}
}

func TestLoadErrors(t *testing.T) {
	bad := map[string]string{
		"missing file": filepath.Join(t.TempDir(), "none.lua"),
		"syntax":       "function main(input)\n  return input +\nend\n",
		"no main":      "local json = require('json')\nfunction other(input) return input end\n",
		"chunk error":  "error('at load')\nfunction main(input) return input end\n",
		"no module":    "local x = require('nosuchmodule')\nfunction main(input) return input end\n",
	}
	for _, m := range modes() {
		for what, code := range bad {
			if _, err := New(m).Load(code); err == nil {
				t.Errorf("%v: %s must be a Load error", m, what)
			} else if !strings.HasPrefix(err.Error(), "lua: ") && what != "missing file" {
				t.Errorf("%v: %s: %v", m, what, err)
			}
		}
		if _, err := New(m).Value(udf.Row{}); err == nil {
			t.Errorf("%v: Value before Load must be an error", m)
		}
		h := load(t, m, "function main(input)\n  return 42\nend\n")
		if _, err := h.Value(udf.Row{}); err == nil || !strings.Contains(err.Error(), "want a string") {
			t.Errorf("%v: main returning a number: %v", m, err)
		}
	}
}
