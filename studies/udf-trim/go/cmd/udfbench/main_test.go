package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"bridgebench/probe"
	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

const studyDir = "../../.."

func TestMain(m *testing.M) { udftest.Main(m) }

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func params() []string {
	var ps []string
	for _, w := range udf.Workloads {
		for _, s := range udf.Sizes {
			ps = append(ps, w+"/"+s)
		}
	}
	return ps
}

func nativeAnswer(t *testing.T, param string) string {
	t.Helper()
	workload, size, _ := strings.Cut(param, "/")
	row, err := udf.MakeRow(size)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := udf.Native(workload)
	if err != nil {
		t.Fatal(err)
	}
	v, err := fn(row)
	if err != nil {
		t.Fatal(err)
	}
	a, err := answer(v.(string))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestEveryMechanismAgrees(t *testing.T) {
	for _, loader := range udf.Names() {
		if loader == "plugin" {
			continue // TestBinaryWithPlugin: a plugin must be opened by a binary built like it
		}
		vars := map[string]string{"UDF_LOADER": loader, "UDF_STUDY_DIR": studyDir}
		if loader == "wasm" {
			vars["UDF_WASM"] = udftest.Guest(t)
		}
		env := envOf(vars)
		for _, param := range params() {
			res, err := probe.RunWith(setup(env), answer, 2, param, 1)
			if err != nil {
				t.Errorf("%s %s: %v", loader, param, err)
				continue
			}
			if want := nativeAnswer(t, param); res.Answer != want {
				t.Errorf("%s %s: answer %s, native's %s", loader, param, res.Answer, want)
			}
		}
	}
}

func TestAnswerIgnoresKeyOrderAndSpacing(t *testing.T) {
	a, err := answer(`{"b": [1, 2.0], "a": "x"}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := answer(`{"a":"x","b":[1,2]}`)
	if a != b || len(a) != 16 {
		t.Errorf("answers %q and %q", a, b)
	}
	if _, err := answer("not json"); err == nil {
		t.Error("a result that is not JSON must be an error")
	}
}

func TestSetupErrors(t *testing.T) {
	cases := []struct {
		env   map[string]string
		param string
		want  string
	}{
		{map[string]string{}, "trim/small", "UDF_LOADER is not set"},
		{map[string]string{"UDF_LOADER": "nosuch"}, "trim/small", "no loader"},
		{map[string]string{"UDF_LOADER": "native"}, "trim", "WORKLOAD/SIZE"},
		{map[string]string{"UDF_LOADER": "native"}, "sum/small", "unknown workload"},
		{map[string]string{"UDF_LOADER": "native"}, "trim/huge", "unknown row size"},
		{map[string]string{"UDF_LOADER": "gopherlua-pooled"}, "trim/small", "UDF_STUDY_DIR is not set"},
		{map[string]string{"UDF_LOADER": "yaegi", "UDF_STUDY_DIR": t.TempDir()}, "trim/small", "no such file"},
		{map[string]string{"UDF_LOADER": "plugin"}, "trim/small", "UDF_PLUGIN is not set"},
		{map[string]string{"UDF_LOADER": "wasm"}, "trim/small", "UDF_WASM is not set"},
	}
	for _, c := range cases {
		_, err := probe.RunWith(setup(envOf(c.env)), answer, 1, c.param, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %s: error %v, want one mentioning %q", c.env, c.param, err, c.want)
		}
	}
	if _, err := sourceFor("nosuch-something"); err == nil {
		t.Error("a mechanism without a source must be an error")
	}
	if _, err := sourceFor("gopherlua-fresh"); err != nil {
		t.Error(err)
	}
}

// TestBinaryWithPlugin builds the binary and the plugin as a study does, and runs them.
func TestBinaryWithPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	bin := udftest.Built(t, "bridgebench/udftrim/cmd/udfbench", "udfbench", nil)
	so := udftest.Plugin(t)
	for _, loader := range []string{"plugin", "native"} {
		for _, param := range []string{"trim/small", "encode/medium"} {
			cmd := exec.Command(bin, "3", param)
			cmd.Env = append(os.Environ(), "UDF_LOADER="+loader, "UDF_PLUGIN="+so, "UDF_STUDY_DIR="+studyDir)
			out, err := cmd.Output()
			if err != nil {
				stderr := ""
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("%s %s: %v\n%s", loader, param, err, stderr)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var res probe.Result
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("%s %s: last line is not a result: %v\n%s", loader, param, err, out)
			}
			if res.Protocol != probe.Protocol || len(res.Times) != 3 || res.Answer != nativeAnswer(t, param) {
				t.Errorf("%s %s: %+v", loader, param, res)
			}
		}
	}
}
