package plugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

var (
	buildOnce sync.Once
	soPath    string
	buildErr  string
	buildDir  string
)

// buildPlugin builds ../../plugins/udf into a temporary folder once per test binary, with the go
// command on PATH (it must be the toolchain that built this test, or Open refuses the plugin).
func buildPlugin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "udfplugin")
		if err != nil {
			buildErr = err.Error()
			return
		}
		buildDir = dir
		soPath = filepath.Join(dir, "udf.so")
		cmd := exec.Command("go", "build", "-buildmode=plugin", "-o", soPath, "bridgebench/udftrim/plugins/udf")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = strings.TrimSpace("go build -buildmode=plugin failed: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != "" {
		t.Skip(buildErr)
	}
	return soPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// load loads a symbol of the test plugin, skipping when this test binary cannot open plugins built
// by `go build` (e.g. under -cover or -race, which change the shared packages).
func load(t *testing.T, symbol string) udf.Handler {
	t.Helper()
	so := buildPlugin(t)
	h, err := (&Handler{}).Load(so + "#" + symbol)
	if err != nil && strings.Contains(err.Error(), "different version of package") {
		t.Skipf("this test binary cannot open the plugin (built with other flags?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestAgreesWithNative(t *testing.T) {
	so := buildPlugin(t)
	load(t, "Trim")
	h, err := udf.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	udftest.AgreesWithNative(t, h, func(w string) string {
		return so + "#" + strings.ToUpper(w[:1]) + w[1:]
	})
}

func TestUncrossableRows(t *testing.T) {
	udftest.RejectsUncrossable(t, load(t, "Trim"))
	udftest.RejectsUncrossable(t, load(t, "Encode"))
}

func TestLoadErrors(t *testing.T) {
	so := buildPlugin(t)
	load(t, "Trim")
	for _, uri := range []string{"", "udf.so", so, so + "#", "#Trim", filepath.Join(t.TempDir(), "none.so#Trim"), so + "#Nope", so + "#main"} {
		if _, err := (&Handler{}).Load(uri); err == nil {
			t.Errorf("Load(%q) must be an error", uri)
		}
	}
	if _, err := (&Handler{}).Value(udf.Row{}); err == nil {
		t.Error("Value before Load must be an error")
	}
}
