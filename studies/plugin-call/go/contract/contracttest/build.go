package contracttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build runs `go build flags -o dir/file pkg` with env added (the go command on PATH: for a Go plugin it
// must be the toolchain that built the test binary, or plugin.Open refuses the .so) and returns the
// output's path; it skips t, with the reason, if the build fails.
func Build(t testing.TB, dir, pkg, file string, env []string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, file)
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("go build %s failed: %v\n%s", pkg, err, msg)
	}
	return out
}

// BuildWasmModule builds the Go program pkg as a wasip1 reactor (-buildmode=c-shared) into dir.
func BuildWasmModule(t testing.TB, dir, pkg, file string) string {
	t.Helper()
	return Build(t, dir, pkg, file, []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}, "-buildmode=c-shared")
}

// BuildGoPlugin builds plugins/goplugin into dir with -buildmode=plugin and returns the .so's path.
func BuildGoPlugin(t testing.TB, dir string) string {
	t.Helper()
	return Build(t, dir, "bridgebench/plugincall/plugins/goplugin", "goplugin.so", nil, "-buildmode=plugin")
}

// BuildWasm builds wasm/guest (the wazero mechanism's module) into dir and returns the module's path.
func BuildWasm(t testing.TB, dir string) string {
	t.Helper()
	return BuildWasmModule(t, dir, "bridgebench/plugincall/wasm/guest", "plugin.wasm")
}
