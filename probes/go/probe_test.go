package probe

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// constSetup returns a Setup whose op answers ans and counts its calls in *calls.
func constSetup(ans string, calls *int, cleaned *bool) Setup {
	return func(param string) (Op, func(), error) {
		op := func() (string, error) {
			*calls++
			return ans, nil
		}
		return op, func() { *cleaned = true }, nil
	}
}

func TestCalibrateDoublesUntilOneMillisecond(t *testing.T) {
	var asked []int
	k, err := calibrate(func(k int) (int64, error) {
		asked = append(asked, k)
		return int64(k) * 1000, nil // 1 µs per call
	})
	if err != nil || k != 1024 {
		t.Fatalf("calibrate = %d, %v; want 1024", k, err)
	}
	if len(asked) != 11 || asked[0] != 1 || asked[10] != 1024 {
		t.Fatalf("asked for batches %v, want 1, 2, 4, ..., 1024", asked)
	}

	// A slow call: one is enough.
	if k, _ := calibrate(func(int) (int64, error) { return 5e6, nil }); k != 1 {
		t.Fatalf("slow op: K = %d, want 1", k)
	}
	// A clock that never moves: K stops at the cap.
	if k, _ := calibrate(func(int) (int64, error) { return 0, nil }); k != MaxBatch {
		t.Fatalf("frozen clock: K = %d, want %d", k, MaxBatch)
	}
	// An error stops calibration.
	boom := errors.New("boom")
	if _, err := calibrate(func(k int) (int64, error) {
		if k == 8 {
			return 0, boom
		}
		return 1, nil
	}); !errors.Is(err, boom) {
		t.Fatalf("calibrate error = %v, want boom", err)
	}
}

// spin busy-waits d on the Go monotonic clock.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func TestCalibrationOnMicrosecondOp(t *testing.T) {
	calls := 0
	setup := func(string) (Op, func(), error) {
		return func() (string, error) { calls++; spin(time.Microsecond); return "ok", nil }, nil, nil
	}
	const iterations = 3
	res, err := Run(setup, iterations, "", AutoBatch)
	if err != nil {
		t.Fatal(err)
	}
	k := res.Batch
	if !res.Calibrated || k < 1 || bits.OnesCount(uint(k)) != 1 {
		t.Fatalf("batch %d (calibrated %v): want a calibrated power of two", k, res.Calibrated)
	}
	// Every call lasts at least 1 µs, so a batch of 1024 lasts at least 1 ms: calibration stops there
	// at the latest.
	if k > 1024 {
		t.Fatalf("batch %d: a batch of 1024 calls of >= 1 µs already lasts >= 1 ms", k)
	}
	// Calibration ran batches 1, 2, ..., K (2K-1 calls), then the iterations ran K calls each.
	if want := 2*k - 1 + iterations*k; calls != want {
		t.Fatalf("op called %d times, want %d", calls, want)
	}
	if len(res.Times) != iterations {
		t.Fatalf("%d times, want %d", len(res.Times), iterations)
	}
	for i, s := range res.Times {
		// K calls of >= 1 µs each (allowing for the two clocks' rates differing by NTP slewing).
		if s < 0.99*float64(k)*1e-6 {
			t.Errorf("iteration %d took %g s, less than %d calls of 1 µs", i+1, s, k)
		}
	}
}

func TestFixedBatch(t *testing.T) {
	calls, cleaned := 0, false
	var gotParam string
	setup := func(param string) (Op, func(), error) {
		gotParam = param
		time.Sleep(2 * time.Millisecond)
		return constSetup("42", &calls, &cleaned)(param)
	}
	res, err := Run(setup, 4, "row-17", 7)
	if err != nil {
		t.Fatal(err)
	}
	if gotParam != "row-17" {
		t.Errorf("setup got param %q", gotParam)
	}
	if res.Batch != 7 || res.Calibrated || calls != 28 {
		t.Errorf("batch %d, calibrated %v, %d calls; want 7, false, 28", res.Batch, res.Calibrated, calls)
	}
	if !cleaned {
		t.Error("cleanup did not run")
	}
	if res.Answer != "42" || res.Protocol != Protocol || len(res.Times) != 4 {
		t.Errorf("result %+v", res)
	}
	if res.SetupS < 0.002 {
		t.Errorf("setup_s = %g, but setup slept 2 ms", res.SetupS)
	}
	for _, c := range [][]float64{res.Counters.BytesPerOp, res.Counters.AllocsPerOp} {
		if len(c) != 4 {
			t.Errorf("counter with %d values, want 4", len(c))
		}
	}
	if len(res.Counters.GCCycles) != 4 {
		t.Errorf("gc_cycles with %d values, want 4", len(res.Counters.GCCycles))
	}
	if runtime.GOOS == "linux" {
		if len(res.Counters.CPUSeconds) != 4 {
			t.Errorf("cpu_s with %d values, want 4", len(res.Counters.CPUSeconds))
		}
		for i, c := range res.Counters.CPUSeconds {
			if c < 0 {
				t.Errorf("cpu_s[%d] = %g, want CPU time (>= 0)", i, c)
			}
		}
	}
	if res.Clock == "" || res.Go == "" || res.GOMAXPROCS < 1 {
		t.Errorf("missing environment fields: %+v", res)
	}
}

func TestBadArgumentsToRun(t *testing.T) {
	calls, cleaned := 0, false
	s := constSetup("x", &calls, &cleaned)
	for _, c := range []struct{ it, batch int }{{0, 1}, {-1, 1}, {1, -1}} {
		if _, err := Run(s, c.it, "", c.batch); err == nil {
			t.Errorf("Run(iterations %d, batch %d) succeeded", c.it, c.batch)
		}
	}
	if _, err := Run(nil, 1, "", 1); err == nil {
		t.Error("Run(nil setup) succeeded")
	}
}

var errBoom = errors.New("boom")

func TestOpErrorIsReported(t *testing.T) {
	calls, cleaned := 0, false
	setup := func(string) (Op, func(), error) {
		return func() (string, error) {
			calls++
			if calls == 5+3 { // call 3 of iteration 2
				return "", errBoom
			}
			return "x", nil
		}, func() { cleaned = true }, nil
	}
	_, err := Run(setup, 4, "", 5)
	if !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if want := "call 3 of iteration 2 failed: boom"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if calls != 8 {
		t.Errorf("%d calls: the batch should stop at the failing call", calls)
	}
	if !cleaned {
		t.Error("cleanup did not run after the failure")
	}

	// A failure during calibration.
	setup = func(string) (Op, func(), error) {
		return func() (string, error) { return "", errBoom }, nil, nil
	}
	_, err = Run(setup, 4, "", AutoBatch)
	if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "call 1 of calibration") {
		t.Errorf("calibration failure: err = %v", err)
	}
}

func TestSetupErrorIsReported(t *testing.T) {
	cleaned := false
	setup := func(param string) (Op, func(), error) {
		return nil, func() { cleaned = true }, errBoom
	}
	_, err := Run(setup, 1, "lib.so", 1)
	if !errors.Is(err, errBoom) || err.Error() != `setup("lib.so") failed: boom` {
		t.Errorf("err = %v", err)
	}
	if !cleaned {
		t.Error("the cleanup setup returned with its error did not run")
	}

	noOp := func(string) (Op, func(), error) { return nil, nil, nil }
	if _, err := Run(noOp, 1, "", 1); err == nil || !strings.Contains(err.Error(), "no op") {
		t.Errorf("setup returning no op: err = %v", err)
	}
}

func TestAnswerMismatchIsDetected(t *testing.T) {
	calls, cleaned := 0, false
	setup := func(string) (Op, func(), error) {
		return func() (string, error) {
			calls++
			if calls > 4 { // iterations 1 and 2 (batch 2) answer "a", iteration 3 "b"
				return "b", nil
			}
			return "a", nil
		}, func() { cleaned = true }, nil
	}
	res, err := Run(setup, 5, "", 2)
	if err == nil || !strings.HasPrefix(err.Error(), "iteration 3 answered differently") {
		t.Fatalf("err = %v", err)
	}
	if res.Answer != "a" || !cleaned {
		t.Errorf("answer %q, cleaned %v", res.Answer, cleaned)
	}

	// Only the last answer of a batch is compared.
	calls = 0
	setup = func(string) (Op, func(), error) {
		return func() (string, error) {
			calls++
			if calls%3 == 1 {
				return "first of the batch", nil
			}
			return "a", nil
		}, nil, nil
	}
	if _, err := Run(setup, 3, "", 3); err != nil {
		t.Errorf("answers differing inside a batch: %v", err)
	}
}

func TestPanicsAreErrors(t *testing.T) {
	cleaned := false
	setup := func(string) (Op, func(), error) {
		n := 0
		return func() (string, error) {
			n++
			if n == 3 {
				var m map[string]int
				m["x"] = 1 // panics: assignment to entry in nil map
			}
			return "x", nil
		}, func() { cleaned = true }, nil
	}
	_, err := Run(setup, 3, "", 1)
	if err == nil || !strings.Contains(err.Error(), "op panicked in iteration 3") ||
		!strings.Contains(err.Error(), "probe_test.go:") {
		t.Errorf("err = %v; want the iteration and the panic site", err)
	}
	if !cleaned {
		t.Error("cleanup did not run after the panic")
	}

	setup = func(string) (Op, func(), error) { panic("no plugin") }
	if _, err := Run(setup, 1, "p", 1); err == nil || !strings.Contains(err.Error(), "setup(\"p\") failed: panic: no plugin") {
		t.Errorf("setup panic: err = %v", err)
	}
}

var sink *[64]byte

func TestCountersDoNotAllocate(t *testing.T) {
	r := newRunner(func() (string, error) { return "x", nil }, newClock())
	if n := testing.AllocsPerRun(100, func() { r.counters() }); n != 0 {
		t.Errorf("reading the counters allocates %g times", n)
	}
	if n := testing.AllocsPerRun(100, func() { r.batch(10) }); n != 0 {
		t.Errorf("a batch of a non-allocating op allocates %g times", n)
	}
	if n := testing.AllocsPerRun(100, func() { r.clk.now() }); n != 0 {
		t.Errorf("reading the clock allocates %g times", n)
	}
}

func TestCountersOfNonAllocatingOp(t *testing.T) {
	op := func(string) (Op, func(), error) { return func() (string, error) { return "x", nil }, nil, nil }
	res, err := Run(op, 5, "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Times {
		if a, b := res.Counters.AllocsPerOp[i], res.Counters.BytesPerOp[i]; a > 0.01 || b > 1 {
			t.Errorf("iteration %d: %g allocs, %g B per op for an op that allocates nothing", i+1, a, b)
		}
	}

	// With a batch of one call, anything the probe allocated per iteration would add up over the
	// iterations (the runtime accounts small objects per span, so look at the sum).
	res, err = Run(op, 3000, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, a := range res.Counters.AllocsPerOp {
		total += a
	}
	if total > 300 {
		t.Errorf("%g objects allocated over 3000 one-call iterations of an op that allocates nothing", total)
	}
}

func TestCountersOfOpAllocating64Bytes(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setup := func(string) (Op, func(), error) {
		return func() (string, error) { sink = new([64]byte); return "x", nil }, nil, nil
	}
	const batch = 100000
	res, err := Run(setup, 5, "", batch)
	if err != nil {
		t.Fatal(err)
	}
	var cycles uint64
	for i := range res.Times {
		a, b := res.Counters.AllocsPerOp[i], res.Counters.BytesPerOp[i]
		// Exact to within one span of 64-byte objects (see Counters).
		if a < 0.99 || a > 1.01 || b < 64*0.99 || b > 64*1.01 {
			t.Errorf("iteration %d: %g allocs, %g B per op; want 1 and 64", i+1, a, b)
		}
		cycles += res.Counters.GCCycles[i]
	}
	// 5 × 100000 × 64 B = 32 MB, far beyond the 4 MB minimum heap goal at GOGC=100.
	if cycles == 0 {
		t.Error("no GC cycle counted while allocating 32 MB")
	}
}

func TestAnswerTransformRunsOnEveryIterationAndCanFail(t *testing.T) {
	calls := 0
	setup := func(string) (Op, func(), error) {
		return func() (string, error) { return "raw-result", nil }, nil, nil
	}
	res, err := RunWith(setup, func(raw string) (string, error) {
		calls++
		return "digest(" + raw + ")", nil
	}, 4, "p", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "digest(raw-result)" || calls != 4 {
		t.Errorf("answer %q after %d transforms, want digest(raw-result) after 4", res.Answer, calls)
	}
	_, err = RunWith(setup, func(string) (string, error) { return "", errors.New("not JSON") }, 2, "p", 1)
	if err == nil || !strings.Contains(err.Error(), "the answer of iteration 1: not JSON") {
		t.Errorf("a failing transform must fail the run, got %v", err)
	}
}

func TestSteppedModeWaitsForEachGoAndAnswersWithTheSeconds(t *testing.T) {
	var out bytes.Buffer
	step := &stepper{in: bufio.NewReader(strings.NewReader("ggg")), out: &out}
	res, err := runWith(func(string) (Op, func(), error) { return func() (string, error) { return "x", nil }, nil, nil },
		nil, 3, "p", 1, step)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || lines[0] != Ready {
		t.Fatalf("want ready and three answers, got %q", lines)
	}
	for i, line := range lines[1:] {
		if got, err := strconv.ParseFloat(line, 64); err != nil || math.Abs(got-res.Times[i]) > 1e-9*math.Max(1, got) {
			t.Fatalf("answer %d is %q, the iteration took %g", i+1, line, res.Times[i])
		}
	}
}

func TestSteppedModeStopsOnAnythingButGo(t *testing.T) {
	var out bytes.Buffer
	step := &stepper{in: bufio.NewReader(strings.NewReader("gx")), out: &out}
	_, err := runWith(func(string) (Op, func(), error) { return func() (string, error) { return "x", nil }, nil, nil },
		nil, 3, "p", 1, step)
	if err == nil || !strings.Contains(err.Error(), "before iteration 2") {
		t.Fatalf("want an error naming iteration 2, got %v", err)
	}
}
