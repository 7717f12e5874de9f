// Package hctest holds the tests shared by the out-of-process mechanisms: build the server program,
// check the contract's answers, kill the plugin process under the host.
package hctest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"bridgebench/plugincall/contract"
)

// BuildServer builds the server program pkg (an import path) into t.TempDir() and returns its path;
// it skips the test, with the reason, if the build fails.
func BuildServer(t *testing.T, pkg string) string {
	t.Helper()
	return build(t, pkg, filepath.Base(pkg), nil)
}

// BuildWasm builds the Go program pkg for GOOS=wasip1 GOARCH=wasm as a reactor (-buildmode=c-shared)
// into t.TempDir() and returns the .wasm path; it skips the test, with the reason, if the build fails.
func BuildWasm(t *testing.T, pkg string) string {
	t.Helper()
	return build(t, pkg, filepath.Base(pkg)+".wasm", []string{"GOOS=wasip1", "GOARCH=wasm"}, "-buildmode=c-shared")
}

func build(t *testing.T, pkg, file string, env []string, flags ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), file)
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// CheckAnswers opens mechanism name and checks IntFunc for several x and BytesFunc for every payload.
func CheckAnswers(t *testing.T, name string, cfg contract.Config) {
	t.Helper()
	p, err := contract.Open(name, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	for _, x := range []int64{0, 1, -1, 42, 1 << 40, -(1 << 62), 0x7fffffffffffffff} {
		got, err := p.Int(x)
		if err != nil {
			t.Fatalf("Int(%d): %v", x, err)
		}
		if want := contract.IntFunc(x); got != want {
			t.Errorf("Int(%d) = %d, want %d", x, got, want)
		}
	}
	for _, size := range []string{"0", "64", "1k", "16k"} {
		in := contract.Payload(contract.Payloads[size])
		keep := bytes.Clone(in)
		got, err := p.Bytes(in)
		if err != nil {
			t.Fatalf("Bytes(%s): %v", size, err)
		}
		if want := contract.BytesFunc(keep); !bytes.Equal(got, want) || got == nil {
			t.Errorf("Bytes(%s): got %d bytes (nil %v), want %d, equal %v", size, len(got), got == nil, len(want), bytes.Equal(got, want))
		}
		if !bytes.Equal(in, keep) {
			t.Errorf("Bytes(%s) changed its input", size)
		}
	}
}

// Process is what the kill tests need of a host beyond contract.Plugin.
type Process interface {
	contract.Plugin
	Pid() int
	Exited() bool
}

// Gone reports whether pid no longer exists (exited and reaped), waiting up to d.
func Gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CheckKill starts the plugin, makes a few calls, kills the plugin process with SIGKILL and checks that
// the next calls return an error within a bounded time (a dead plugin fails the run, it is not a fast
// call), and that Close afterwards returns and leaves no process.
func CheckKill(t *testing.T, name string, cfg contract.Config) {
	t.Helper()
	p := openProcess(t, name, cfg)
	pid := p.Pid()
	for x := int64(0); x < 5; x++ {
		if _, err := p.Int(x); err != nil {
			t.Fatalf("Int(%d) before the kill: %v", x, err)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !p.Exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Exited() {
		t.Fatalf("plugin process %d not seen exiting 10 s after SIGKILL", pid)
	}
	within(t, "Int after the kill", 10*time.Second, func() error { _, err := p.Int(7); return err })
	within(t, "Bytes after the kill", 10*time.Second, func() error {
		_, err := p.Bytes(contract.Payload(64))
		return err
	})
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		t.Logf("Close after the kill: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatalf("Close hung after the plugin process was killed")
	}
	if !Gone(pid, 5*time.Second) {
		t.Errorf("plugin process %d still exists after Close", pid)
	}
}

// CheckClose checks that Close ends the plugin process (no orphans).
func CheckClose(t *testing.T, name string, cfg contract.Config) {
	t.Helper()
	p := openProcess(t, name, cfg)
	pid := p.Pid()
	if _, err := p.Int(1); err != nil {
		t.Fatalf("Int: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !Gone(pid, 5*time.Second) {
		t.Errorf("plugin process %d still exists after Close", pid)
	}
}

func openProcess(t *testing.T, name string, cfg contract.Config) Process {
	t.Helper()
	pl, err := contract.Open(name, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	p, ok := pl.(Process)
	if !ok {
		pl.Close()
		t.Fatalf("%s's plugin (%T) has no Pid/Exited", name, pl)
	}
	if p.Pid() <= 0 {
		p.Close()
		t.Fatalf("no plugin process id")
	}
	if _, err := os.Stat("/proc/" + itoa(p.Pid())); err != nil && runtime.GOOS == "linux" {
		p.Close()
		t.Fatalf("plugin process %d not in the process table: %v", p.Pid(), err)
	}
	return p
}

func within(t *testing.T, what string, d time.Duration, call func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("%s: no error from a dead plugin process", what)
		} else {
			t.Logf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Errorf("%s: no answer within %v (hang)", what, d)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
