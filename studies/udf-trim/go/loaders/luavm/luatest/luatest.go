//go:build luajit || lua54

// Package luatest is the test suite of the cgo Lua loaders, shared by ../../luajit and ../../lua54
// (each runs it on the VM its build tag links).
package luatest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"bridgebench/udftrim/loaders/luascripts"
	"bridgebench/udftrim/loaders/luavm"
	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

// ScriptsDir is the study's shared Lua scripts (trim.lua, encode.lua) seen from a loader package.
const ScriptsDir = "../../../scripts"

var crossings = []luavm.Crossing{luavm.JSON, luavm.Table}

// source is what a crossing loads for a workload: the shared script, or the table script.
func source(t testing.TB, c luavm.Crossing, workload string) string {
	t.Helper()
	if c == luavm.Table {
		code, err := luascripts.Table(workload)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	path := filepath.Join(ScriptsDir, workload+".lua")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the shared script: %v", err)
	}
	return path
}

// load looks the crossing's mechanism up by name and loads code into it.
func load(t testing.TB, c luavm.Crossing, code string) *luavm.Handler {
	t.Helper()
	h, err := udf.Lookup(c.Name())
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := h.Load(code)
	if err != nil {
		t.Fatalf("%s: %v", c.Name(), err)
	}
	lh := loaded.(*luavm.Handler)
	t.Cleanup(func() { _ = lh.Close() })
	return lh
}

// script is a one-function script for a crossing: body is the entry point's body, its argument x.
func script(c luavm.Crossing, body string) string {
	return fmt.Sprintf("local json = require(\"json\")\nfunction %s(x)\n%s\nend\n", c.Entry(), body)
}

// Main is the loader package's TestMain: it runs the JIT-loop child (see jitLoop) when asked to, and
// otherwise the tests, without the per-call deadline unless a test sets one (see udftest.Main).
func Main(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(jitLoopChild())
	}
	udftest.Main(m)
}

// Run runs the suite.
func Run(t *testing.T) {
	t.Run("answers", answers)
	t.Run("nulls-nul-bytes-unicode", awkwardValues)
	t.Run("script-errors", scriptErrors)
	t.Run("load-errors", loadErrors)
	t.Run("timeout", timeout)
	t.Run("unencodable-rows", unencodable)
	t.Run("concurrent", concurrent)
	t.Run("close", closing)
	if luavm.Flavour == "luajit" {
		t.Run("jit-compiled-loop-ignores-hook", jitLoop)
	}
}

// answers: every workload × size × crossing gives native's canonical answer (the shared check, then
// three calls in a row on one state).
func answers(t *testing.T) {
	for _, c := range crossings {
		h, err := udf.Lookup(c.Name())
		if err != nil {
			t.Fatal(err)
		}
		udftest.AgreesWithNative(t, h, func(w string) string { return source(t, c, w) })
		for _, w := range udf.Workloads {
			h := load(t, c, source(t, c, w))
			native, _ := udf.Native(w)
			for _, size := range udf.Sizes {
				row, err := udf.MakeRow(size)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := native(row)
				for i := 0; i < 3; i++ { // the pooled state again: no state left from the call before
					got, err := h.Value(row)
					if err != nil {
						t.Fatalf("%s %s/%s: %v", c.Name(), w, size, err)
					}
					if udftest.Canonical(t, got) != udftest.Canonical(t, want) {
						t.Fatalf("%s %s/%s:\n got %.300s\nwant %.300s", c.Name(), w, size, udftest.Canonical(t, got), udftest.Canonical(t, want))
					}
				}
			}
		}
	}
}

// awkwardValues: nulls (kept, in objects and arrays), NUL bytes and non-ASCII cross both ways.
func awkwardValues(t *testing.T) {
	row := udf.Row{"null": nil, "arr": []any{1.0, nil, "x", nil}, "nul": "a\x00b", "uni": "héllo ✓",
		"nested": map[string]any{"n": nil, "deep": []any{[]any{true, false}}}, "quote": `"\/<>&`}
	want, _ := udf.Encode(row)
	for _, c := range crossings {
		h := load(t, c, source(t, c, "encode"))
		got, err := h.Value(row)
		if err != nil {
			t.Fatalf("%s: %v", c.Name(), err)
		}
		if udftest.Canonical(t, got) != udftest.Canonical(t, want) {
			t.Errorf("%s:\n got %s\nwant %s", c.Name(), udftest.Canonical(t, got), udftest.Canonical(t, want))
		}
	}
}

func scriptErrors(t *testing.T) {
	row := udf.Row{"a": 1.0}
	for _, c := range crossings {
		h := load(t, c, script(c, `error("boom from the script")`))
		_, err := h.Value(row)
		if err == nil || !strings.Contains(err.Error(), "boom from the script") || !strings.Contains(err.Error(), "inline.lua:3") {
			t.Errorf("%s: want the script's message and line, got %v", c.Name(), err)
		}
		if errors.Is(err, luavm.ErrTimeout) {
			t.Errorf("%s: a script error is not a timeout: %v", c.Name(), err)
		}
		// Non-string error objects, results that are not strings, and the state still works after.
		h = load(t, c, script(c, `if type(x) == "string" and x:find("table") or type(x) == "table" and x.kind == "table" then error({}) end
if (type(x) == "string" and x:find("number")) or (type(x) == "table" and x.kind == "number") then return 42 end
return json.encode({ok = true})`))
		if _, err := h.Value(udf.Row{"kind": "table"}); err == nil || !strings.Contains(err.Error(), "error object is a table value") {
			t.Errorf("%s: error({}): got %v", c.Name(), err)
		}
		if _, err := h.Value(udf.Row{"kind": "number"}); err == nil || !strings.Contains(err.Error(), "returned a number") {
			t.Errorf("%s: a number result: got %v", c.Name(), err)
		}
		if got, err := h.Value(udf.Row{"kind": "ok"}); err != nil || got != `{"ok":true}` {
			t.Errorf("%s: after errors: %v %v", c.Name(), got, err)
		}
	}
}

func loadErrors(t *testing.T) {
	for _, c := range crossings {
		h, _ := udf.Lookup(c.Name())
		cases := map[string]string{
			"syntax":         "function " + c.Entry() + "(x)\n  return (\nend\n",
			"no entry point": "function other(x)\n return x\nend\n",
			"chunk error":    "local x = nil\nerror('fails at load')\n",
		}
		wants := map[string]string{"syntax": "inline.lua:", "no entry point": "no global function " + c.Entry(),
			"chunk error": "fails at load"}
		for name, code := range cases {
			if _, err := h.Load(code); err == nil || !strings.Contains(err.Error(), wants[name]) {
				t.Errorf("%s %s: want an error with %q, got %v", c.Name(), name, wants[name], err)
			}
		}
		if _, err := h.Load("/no/such/script.lua"); err == nil {
			t.Errorf("%s: a missing file loaded", c.Name())
		}
		if _, err := h.Value(udf.Row{}); err == nil {
			t.Errorf("%s: Value before Load must be an error", c.Name())
		}
	}
	t.Setenv(luavm.CPathEnv, "/nowhere/?.so")
	h, _ := udf.Lookup(luavm.JSON.Name())
	if _, err := h.Load(source(t, luavm.JSON, "trim")); err == nil || !strings.Contains(err.Error(), "lua-cjson") {
		t.Errorf("without cjson: want a hint about lua-cjson, got %v", err)
	}
	t.Setenv(luavm.CPathEnv, "")
	t.Setenv(luavm.TimeoutEnv, "soon")
	h, _ = udf.Lookup(luavm.JSON.Name())
	if _, err := h.Load(source(t, luavm.JSON, "trim")); err == nil || !strings.Contains(err.Error(), luavm.TimeoutEnv) {
		t.Errorf("a malformed %s: got %v", luavm.TimeoutEnv, err)
	}
}

// timeout: endless loops are stopped at the deadline, in main, behind pcall, in a coroutine and at Load;
// the handler works afterwards.
func timeout(t *testing.T) {
	t.Setenv(luavm.TimeoutEnv, "50")
	loops := map[string]string{
		"while":     `while true do end`,
		"arith":     `local n = 0 while true do n = n + 1 end`,
		"pcall":     `while true do pcall(function() while true do end end) end`,
		"coroutine": `local co = coroutine.wrap(function() while true do end end) co()`,
		"strings":   `local s = "" while true do s = s .. "x" if #s > 100 then s = "" end end`,
	}
	for _, c := range crossings {
		for name, loop := range loops {
			isLoop := `(type(x) == "string" and x:find('"loop":true', 1, true)) or (type(x) == "table" and x.loop)`
			h := load(t, c, script(c, "if "+isLoop+" then "+loop+" end\nreturn json.encode({ok = true})"))
			start := time.Now()
			_, err := h.Value(udf.Row{"loop": true})
			took := time.Since(start)
			t.Logf("%s %s: %v after %v", c.Name(), name, err, took.Round(time.Millisecond))
			if !errors.Is(err, luavm.ErrTimeout) || !strings.Contains(err.Error(), "exceeded 50ms") {
				t.Errorf("%s %s: want a timeout error, got %v", c.Name(), name, err)
			}
			if took > 2*time.Second {
				t.Errorf("%s %s: the timeout took %v", c.Name(), name, took)
			}
			if got, err := h.Value(udf.Row{"loop": false}); err != nil || got != `{"ok":true}` {
				t.Errorf("%s %s: after the timeout: %v %v", c.Name(), name, got, err)
			}
		}
		h, _ := udf.Lookup(c.Name())
		if _, err := h.Load("while true do end\n"); !errors.Is(err, luavm.ErrTimeout) {
			t.Errorf("%s: a script that loops at load: got %v", c.Name(), err)
		}
	}
	if luavm.Flavour == "luajit" {
		// With the deadline the JIT is off and the script cannot turn it back on.
		h := load(t, luavm.JSON, script(luavm.JSON, `jit.on()`))
		if _, err := h.Value(udf.Row{}); err == nil || !strings.Contains(err.Error(), "JIT stays off") {
			t.Errorf("jit.on() with a deadline: got %v", err)
		}
		h = load(t, luavm.JSON, script(luavm.JSON, `return tostring(jit.status())`))
		if got, err := h.Value(udf.Row{}); err != nil || got != "false" {
			t.Errorf("jit.status() with a deadline: %v %v", got, err)
		}
		t.Setenv(luavm.TimeoutEnv, "0")
		h = load(t, luavm.JSON, script(luavm.JSON, `return tostring(jit.status())`))
		if got, err := h.Value(udf.Row{}); err != nil || got != "true" {
			t.Errorf("jit.status() without a deadline: %v %v", got, err)
		}
	}
}

func unencodable(t *testing.T) {
	cyclic := udf.Row{"a": 1.0}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for i := 0; i < 150; i++ {
		deep = []any{deep}
	}
	rows := map[string]udf.Row{
		"func":      {"f": func() {}},
		"NaN":       {"x": math.NaN()},
		"+Inf":      {"nested": map[string]any{"x": []any{math.Inf(1)}}},
		"channel":   {"c": make(chan int)},
		"cycle":     cyclic,
		"too deep":  {"d": deep},
		"a pointer": {"p": new(int)},
	}
	for _, c := range crossings {
		h := load(t, c, source(t, c, "encode"))
		udftest.RejectsUncrossable(t, h)
		for name, row := range rows {
			if c == luavm.JSON && (name == "too deep" || name == "a pointer") {
				continue // JSON text crosses these (encoding/json writes them); the table crossing refuses
			}
			if v, err := h.Value(row); err == nil || !strings.Contains(err.Error(), "cannot cross") {
				t.Errorf("%s %s: want an error, got %.100v %v", c.Name(), name, v, err)
			}
		}
		if _, err := h.Value(udf.Row{"fine": 1.0}); err != nil {
			t.Errorf("%s: after refused rows: %v", c.Name(), err)
		}
	}
}

// concurrent: many goroutines share a handler whose pool is smaller than they are many.
func concurrent(t *testing.T) {
	t.Setenv(luavm.PoolEnv, "3")
	// This tests the pool, not deadlines: 8 goroutines on a loaded 2-core machine can take a call past
	// the default 100 ms, which would fail the test for the wrong reason.
	t.Setenv(luavm.TimeoutEnv, "0")
	for _, c := range crossings {
		h := load(t, c, source(t, c, "trim"))
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				size := udf.Sizes[g%len(udf.Sizes)]
				row, _ := udf.MakeRow(size)
				want, _ := udf.Trim(row)
				wantC, _ := udf.Canonical(want)
				for i := 0; i < 100; i++ {
					got, err := h.Value(row)
					if err != nil {
						errs <- err
						return
					}
					if gotC, _ := udf.Canonical(got); gotC != wantC {
						errs <- fmt.Errorf("%s %s: wrong answer %.100s", c.Name(), size, gotC)
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
	}
}

func closing(t *testing.T) {
	h := load(t, luavm.JSON, source(t, luavm.JSON, "trim"))
	if _, err := h.Value(udf.Row{"a": 1.0}); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Value(udf.Row{"a": 1.0}); err == nil {
		t.Error("Value after Close must be an error")
	}
	_ = h.Close()
}

const childEnv = "LUATEST_JIT_LOOP_CHILD"

// jitLoop shows why the deadline turns LuaJIT's JIT off: with the JIT on (UDF_LUAJIT_JIT=on), a loop
// that gets compiled never calls the count hook, so the call does not return. A child process runs it;
// the test passes when the child is still looping long after the deadline, then kills it.
func jitLoop(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", luavm.TimeoutEnv+"=50", luavm.JITEnv+"=on")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Errorf("the JIT-compiled loop was stopped (exit %v): the hook works in compiled code after all, update luavm's docs: %s", err, out.String())
	case <-time.After(1500 * time.Millisecond): // 30 deadlines
		_ = cmd.Process.Kill()
		<-done
		if !strings.Contains(out.String(), "interpreted loop stopped") {
			t.Errorf("the child did not get to the compiled loop: %s", out.String())
		}
	}
}

// jitLoopChild runs in the child process, with the JIT on and a 50 ms deadline. First a loop after
// jit.off() (interpreted): the hook stops it. Then the same loop with the JIT on, in a new state (a
// timed-out state is replaced): LuaJIT compiles it, and it never returns.
func jitLoopChild() int {
	h, err := udf.Lookup(luavm.JSON.Name())
	if err != nil {
		fmt.Println(err)
		return 2
	}
	loaded, err := h.Load(script(luavm.JSON, `if x:find("interp") then jit.off(); while true do end end
while true do end`))
	if err != nil {
		fmt.Println(err)
		return 2
	}
	if _, err := loaded.Value(udf.Row{"interp": true}); !errors.Is(err, luavm.ErrTimeout) {
		fmt.Println("the interpreted loop: want a timeout, got", err)
		return 2
	}
	fmt.Println("interpreted loop stopped")
	_, err = loaded.Value(udf.Row{"compiled": true})
	fmt.Println("the compiled loop returned:", err)
	return 1
}

// Bench measures Value for each crossing, workload and size, with and without a deadline (on LuaJIT,
// without one the JIT is on).
func Bench(b *testing.B) {
	for _, deadline := range []string{"100", "0"} {
		for _, c := range crossings {
			for _, w := range udf.Workloads {
				for _, size := range udf.Sizes {
					name := fmt.Sprintf("timeout=%sms/%s/%s/%s", deadline, c.Name(), w, size)
					b.Run(name, func(b *testing.B) {
						b.Setenv(luavm.TimeoutEnv, deadline)
						h := load(b, c, source(b, c, w))
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
}
