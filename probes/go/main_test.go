package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The tests run Main in a child process: the test binary itself, with helperEnv naming the Setup to use.
const helperEnv = "BRIDGEBENCH_PROBE_TEST_MAIN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		Main(helperSetup(mode)) // exits
	}
	os.Exit(m.Run())
}

func helperSetup(mode string) Setup {
	return func(param string) (Op, func(), error) {
		n := 0
		switch mode {
		case "echo":
			return func() (string, error) { return param, nil }, func() {}, nil
		case "setup-fails":
			return nil, nil, errors.New("cannot load " + param + "\nsecond line of the message")
		case "call-fails":
			return func() (string, error) {
				if n++; n == 2 {
					return "", errors.New("boom")
				}
				return "x", nil
			}, nil, nil
		case "alloc": // one 48-byte object a call, kept where the compiler cannot drop it
			return func() (string, error) {
				kept = make([]byte, 48)
				return "x", nil
			}, func() {}, nil
		case "mismatch":
			return func() (string, error) {
				if n++; n > 1 {
					return "b", nil
				}
				return "a", nil
			}, nil, nil
		}
		panic("unknown helper mode " + mode)
	}
}

var kept []byte // what the "alloc" helper's calls allocate

// runMain runs Main in a child process with the given Setup and arguments.
func runMain(t *testing.T, mode string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("running the helper: %v", err)
	}
	return out.String(), errOut.String(), code
}

func TestMainPrintsOneJSONLine(t *testing.T) {
	for _, c := range []struct {
		args       []string
		calibrated bool
	}{
		{[]string{"3", "<row & 7>", "5"}, false},
		{[]string{"2", "p", "auto"}, true},
		{[]string{"2", "p"}, true},
	} {
		stdout, stderr, code := runMain(t, "echo", c.args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", c.args, code, stderr)
		}
		if !strings.HasSuffix(stdout, "\n") || strings.Count(stdout, "\n") != 1 {
			t.Fatalf("%v: stdout is not one line: %q", c.args, stdout)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%v: stdout is not JSON: %v\n%s", c.args, err, stdout)
		}
		for _, key := range []string{"protocol", "times", "batch", "answer", "counters", "setup_s",
			"peak_rss_kb", "clock", "clock_resolution_s", "go", "gomaxprocs"} {
			if _, ok := got[key]; !ok {
				t.Errorf("%v: no %q in %s", c.args, key, stdout)
			}
		}
		var res Result
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		iterations := map[string]int{"3": 3, "2": 2}[c.args[0]]
		if res.Protocol != "bridgebench/1" || len(res.Times) != iterations || res.Answer != c.args[1] ||
			res.Calibrated != c.calibrated || res.Batch < 1 || (!c.calibrated && res.Batch != 5) {
			t.Errorf("%v: result %s", c.args, stdout)
		}
		for name, n := range map[string]int{
			"bytes_per_op":  len(res.Counters.BytesPerOp),
			"allocs_per_op": len(res.Counters.AllocsPerOp),
			"gc_cycles":     len(res.Counters.GCCycles),
		} {
			if n != iterations {
				t.Errorf("%v: counter %s has %d values, want %d", c.args, name, n, iterations)
			}
		}
		if res.PeakRSSKB <= 0 && got["clock"] == "CLOCK_MONOTONIC_RAW" { // Linux: /proc is there
			t.Errorf("%v: peak_rss_kb = %d", c.args, res.PeakRSSKB)
		}
	}
}

func TestMainExitCodes(t *testing.T) {
	for _, c := range []struct {
		mode   string
		args   []string
		code   int
		stderr string // prefix of the one line on stderr
	}{
		{"echo", nil, 2, "probe: want 2 or 3 arguments"},
		{"echo", []string{"3"}, 2, "probe: want 2 or 3 arguments"},
		{"echo", []string{"3", "p", "4", "5"}, 2, "probe: want 2 or 3 arguments"},
		{"echo", []string{"0", "p"}, 2, "probe: ITERATIONS must be a positive integer"},
		{"echo", []string{"x", "p"}, 2, "probe: ITERATIONS must be a positive integer"},
		{"echo", []string{"3", "p", "0"}, 2, "probe: BATCH must be"},
		{"echo", []string{"3", "p", "-2"}, 2, "probe: BATCH must be"},
		{"echo", []string{"3", "p", "fast"}, 2, "probe: BATCH must be"},
		{"setup-fails", []string{"3", "lib.so", "1"}, 1,
			`probe: setup("lib.so") failed: cannot load lib.so second line of the message`},
		{"call-fails", []string{"3", "p", "4"}, 1, "probe: call 2 of iteration 1 failed: boom"},
		{"mismatch", []string{"3", "p", "1"}, 1, `probe: iteration 2 answered differently: "b", iteration 1 answered "a"`},
	} {
		stdout, stderr, code := runMain(t, c.mode, c.args...)
		if code != c.code || stdout != "" {
			t.Errorf("%s %v: exit %d, stdout %q; want exit %d and no output", c.mode, c.args, code, stdout, c.code)
		}
		if !strings.HasPrefix(stderr, c.stderr) || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
			t.Errorf("%s %v: stderr %q; want one line starting %q", c.mode, c.args, stderr, c.stderr)
		}
	}
}

// The runtime counts small allocations a span at a time (a span of 48-byte objects holds 170); flushed after
// every iteration, each iteration's counters are its own calls' allocations exactly, however few they are.
func TestAllocationCountersAreExactForEveryIteration(t *testing.T) {
	stdout, stderr, code := runMain(t, "alloc", "12", "p", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	for i := range res.Times {
		if res.Counters.BytesPerOp[i] != 48 || res.Counters.AllocsPerOp[i] != 1 {
			t.Errorf("iteration %d: %g bytes and %g objects an operation, want 48 and 1", i+1,
				res.Counters.BytesPerOp[i], res.Counters.AllocsPerOp[i])
		}
	}
}
