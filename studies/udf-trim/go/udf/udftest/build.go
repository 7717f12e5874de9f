package udftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Package paths of what the tests build.
const (
	PluginPkg = "bridgebench/udftrim/plugins/udf"
	GuestPkg  = "bridgebench/udftrim/wasm/guest"
)

type build struct {
	once       sync.Once
	path, skip string
}

var (
	builds   sync.Map // key: the go build arguments → *build
	dirOnce  sync.Once
	buildDir string
	dirErr   error
)

// Built runs `go build flags -o <file> pkg` (env added) once per test binary and returns the output's
// path, skipping t with the reason if it cannot be built. The go command on PATH builds it: for a Go
// plugin it must be the toolchain that built the test, or plugin.Open refuses the .so. Call
// RemoveBuilds from TestMain when the tests are done.
func Built(t testing.TB, pkg, file string, env []string, flags ...string) string {
	t.Helper()
	key := strings.Join(append(append(append([]string{pkg, file}, env...), "|"), flags...), " ")
	v, _ := builds.LoadOrStore(key, &build{})
	b := v.(*build)
	b.once.Do(func() {
		dirOnce.Do(func() { buildDir, dirErr = os.MkdirTemp("", "udftrim-test-builds-") })
		if dirErr != nil {
			b.skip = dirErr.Error()
			return
		}
		b.path = filepath.Join(buildDir, file)
		cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", b.path, pkg)...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.skip = fmt.Sprintf("go build %s %s failed: %v\n%s", strings.Join(flags, " "), pkg, err, out)
		}
	})
	if b.skip != "" {
		t.Skip(b.skip)
	}
	return b.path
}

// Plugin is the test plugin (plugins/udf, -buildmode=plugin).
func Plugin(t testing.TB) string {
	t.Helper()
	return Built(t, PluginPkg, "udf.so", nil, "-buildmode=plugin")
}

// Guest is the wasm mechanism's module (wasm/guest, a wasip1 reactor).
func Guest(t testing.TB) string {
	t.Helper()
	return Built(t, GuestPkg, "udf.wasm", []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}, "-buildmode=c-shared")
}

// Main runs a package's tests and then removes what Built built. The tests run without the per-call
// deadline (UDF_TIMEOUT_MS=0) unless a test sets one with t.Setenv: answers must not depend on the
// machine's speed, and on a busy 2-core machine a first call (a wasm instance, a fresh Lua VM) can take
// longer than 100 ms. The deadline itself is tested with scripts that never return.
func Main(m *testing.M) {
	if _, set := os.LookupEnv("UDF_TIMEOUT_MS"); !set {
		_ = os.Setenv("UDF_TIMEOUT_MS", "0")
	}
	code := m.Run()
	RemoveBuilds()
	os.Exit(code)
}

// RemoveBuilds deletes what Built built (Main calls it after the tests).
func RemoveBuilds() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}
