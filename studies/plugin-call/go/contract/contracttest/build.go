package contracttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildGoPlugin builds ../../plugins/goplugin (package bridgebench/plugincall/plugins/goplugin) into
// dir with go build -buildmode=plugin, the go command on PATH (it must be the toolchain that built the
// test binary, or plugin.Open refuses the .so), and returns its path; it skips t if the build fails.
func BuildGoPlugin(t testing.TB, dir string) string {
	t.Helper()
	so := filepath.Join(dir, "goplugin.so")
	cmd := exec.Command("go", "build", "-buildmode=plugin", "-o", so, "bridgebench/plugincall/plugins/goplugin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("go build -buildmode=plugin failed: %v\n%s", err, out)
	}
	return so
}

// BuildWasm builds ../../wasm/guest into dir with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
// and returns the module's path; it skips t if the build fails.
func BuildWasm(t testing.TB, dir string) string {
	t.Helper()
	wasm := filepath.Join(dir, "plugin.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", wasm, "bridgebench/plugincall/wasm/guest")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("building the wasm guest failed: %v\n%s", err, out)
	}
	return wasm
}
