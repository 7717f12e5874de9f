// Package hctest holds the tests shared by the out-of-process mechanisms: build the server program,
// check the contract's answers, kill the plugin process under the host.
package hctest

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"bridgebench/plugincall/contract"
	"bridgebench/plugincall/contract/contracttest"
)

// BuildServer builds the server program pkg (an import path) into t.TempDir() and returns its path;
// it skips the test, with the reason, if the build fails.
func BuildServer(t *testing.T, pkg string) string {
	t.Helper()
	return contracttest.Build(t, t.TempDir(), pkg, filepath.Base(pkg), nil)
}

// BuildWasm builds the Go program pkg as a wasip1 reactor into t.TempDir() and returns the .wasm path.
func BuildWasm(t *testing.T, pkg string) string {
	t.Helper()
	return contracttest.BuildWasmModule(t, t.TempDir(), pkg, filepath.Base(pkg)+".wasm")
}

// CheckAnswers opens mechanism name and checks it with contracttest.Check; an empty payload must also
// come back as an empty, non-nil slice (a reply that was lost must not pass for an empty one).
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
	contracttest.Check(t, p)
	if got, err := p.Bytes(contract.Payload(0)); err != nil || got == nil {
		t.Errorf("Bytes(0 bytes) = %v, %v: want an empty, non-nil result", got, err)
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

// leavesNothing points TMPDIR, for the host and the server it starts, at a folder of the test's own and
// checks at the test's end that nothing is left in it: a server killed outright cannot remove its
// unix socket, so the host must.
func leavesNothing(t *testing.T) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Cleanup(func() {
		left, err := os.ReadDir(tmp)
		if err != nil {
			t.Errorf("read %s: %v", tmp, err)
		}
		for _, e := range left {
			t.Errorf("left in TMPDIR after Close: %s", e.Name())
		}
	})
}

// bound is how long a test waits for something that must happen at all (an exit, an error, a return):
// generous, because a busy 2-core machine is slow, and the wait ends as soon as it happens.
const bound = time.Minute

// CheckKill starts the plugin, makes a few calls, kills the plugin process with SIGKILL and checks that
// the next calls return an error within a bounded time (a dead plugin fails the run, it is not a fast
// call), and that Close afterwards returns and leaves no process.
func CheckKill(t *testing.T, name string, cfg contract.Config) {
	t.Helper()
	leavesNothing(t)
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
	deadline := time.Now().Add(bound)
	for !p.Exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Exited() {
		t.Fatalf("plugin process %d not seen exiting %v after SIGKILL", pid, bound)
	}
	within(t, "Int after the kill", bound, func() error { _, err := p.Int(7); return err })
	within(t, "Bytes after the kill", bound, func() error {
		_, err := p.Bytes(contract.Payload(64))
		return err
	})
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		t.Logf("Close after the kill: %v", err)
	case <-time.After(bound):
		t.Fatalf("Close hung after the plugin process was killed")
	}
	if !Gone(pid, bound) {
		t.Errorf("plugin process %d still exists after Close", pid)
	}
}

// CheckLongTempDir checks that a TMPDIR too long for the plugin's unix socket is an error that says so,
// not go-plugin's "Unrecognized remote plugin message", and leaves nothing behind.
func CheckLongTempDir(t *testing.T, name string, cfg contract.Config) {
	t.Helper()
	leavesNothing(t)
	long := filepath.Join(os.Getenv("TMPDIR"), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	p, err := contract.Open(name, cfg)
	if err == nil {
		p.Close()
		t.Fatalf("open %s with TMPDIR %d bytes long: no error", name, len(long))
	}
	if !strings.Contains(err.Error(), "point TMPDIR at a shorter folder") {
		t.Errorf("open %s with a long TMPDIR: %v", name, err)
	}
	if left, _ := os.ReadDir(long); len(left) != 0 {
		t.Errorf("left in the long TMPDIR: %v", left)
	}
	os.Remove(long)
}

// CheckClose checks that Close ends the plugin process (no orphans).
func CheckClose(t *testing.T, name string, cfg contract.Config) {
	t.Helper()
	leavesNothing(t)
	p := openProcess(t, name, cfg)
	pid := p.Pid()
	if _, err := p.Int(1); err != nil {
		t.Fatalf("Int: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !Gone(pid, bound) {
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
	if _, err := os.Stat("/proc/" + strconv.Itoa(p.Pid())); err != nil && runtime.GOOS == "linux" {
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
