package main

import (
	"strings"
	"testing"

	"bridgebench/plugincall/contract"
	"bridgebench/plugincall/contract/contracttest"
	"bridgebench/probe"
)

func TestConfig(t *testing.T) {
	cfg := Config([]string{"CALL_PLUGIN=/a.so", "CALL_WASM=/b=c.wasm", "CALL_=x", "PATH=/bin", "XCALL_Y=1"})
	want := contract.Config{"plugin": "/a.so", "wasm": "/b=c.wasm"}
	if len(cfg) != len(want) || cfg["plugin"] != want["plugin"] || cfg["wasm"] != want["wasm"] {
		t.Errorf("Config = %v, want %v", cfg, want)
	}
}

// run runs the probe on a mechanism with the CALL_* variables env (CALL_MECHANISM added).
func run(t *testing.T, mechanism string, env map[string]string, param string) (probe.Result, error) {
	t.Helper()
	vars := []string{"CALL_MECHANISM=" + mechanism}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	getenv := func(k string) string {
		for _, kv := range vars {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}
	b := newBench(getenv, func() []string { return vars })
	return probe.RunWith(b.setup, b.answer, 2, param, 5)
}

func TestInProcessMechanisms(t *testing.T) {
	dir := t.TempDir()
	wantAnswers := map[string]string{"int": "2703980706"} // IntFunc(12345)
	params := []string{"int"}
	for name, n := range contract.Payloads {
		p := contract.BytesFunc(contract.Payload(n))
		wantAnswers["bytes/"+name] = answerOf(p)
		params = append(params, "bytes/"+name)
	}
	if got := contract.IntFunc(IntArg); wantAnswers["int"] != itoa(got) {
		t.Fatalf("IntFunc(%d) = %d: fix the test's expected answer", IntArg, got)
	}
	mechanisms := []struct {
		name string
		env  func(t *testing.T) map[string]string
	}{
		{"direct", nil},
		{"cgo", nil},
		{"yaegi", nil},
		{"lua54capi", nil},
		{"goplugin", func(t *testing.T) map[string]string {
			return map[string]string{"CALL_PLUGIN": contracttest.BuildGoPlugin(t, dir)}
		}},
		{"wazero", func(t *testing.T) map[string]string {
			return map[string]string{"CALL_WASM": contracttest.BuildWasm(t, dir)}
		}},
	}
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			var env map[string]string
			if m.env != nil {
				env = m.env(t)
			}
			for _, param := range params {
				res, err := run(t, m.name, env, param)
				if err != nil && m.name == "goplugin" && strings.Contains(err.Error(), "different version of package") {
					t.Skipf("this test binary cannot open the plugin (built with other flags?): %v", err)
				}
				if err != nil {
					t.Fatalf("%s: %v", param, err)
				}
				if res.Answer != wantAnswers[param] {
					t.Errorf("%s: answer %q, want %q", param, res.Answer, wantAnswers[param])
				}
				if res.SetupS <= 0 || len(res.Times) != 2 || res.Batch != 5 {
					t.Errorf("%s: result %+v", param, res)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct{ mechanism, param, want string }{
		{"direct", "bytes/2k", "PARAM"},
		{"direct", "float", "PARAM"},
		{"", "int", "CALL_MECHANISM"},
		{"nosuch", "int", "no mechanism"},
		{"goplugin", "int", "CALL_PLUGIN"},
		{"wazero", "int", "CALL_WASM"},
	} {
		_, err := run(t, tc.mechanism, nil, tc.param)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want one mentioning %s", tc.mechanism, tc.param, err, tc.want)
		}
	}
}

func answerOf(out []byte) string {
	b := &bench{isBytes: true, lastOut: out, wantOut: out}
	a, _ := b.answer("")
	return a
}

func itoa(x int64) string {
	b := &bench{lastInt: x, wantInt: x}
	a, _ := b.answer("")
	return a
}
