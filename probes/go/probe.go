// Package probe is the Go side of the bridgebench/1 probe protocol: one process execution of one
// benchmark. A benchmark program calls Main with a Setup; Main reads ITERATIONS PARAM [BATCH] from the
// command line, times ITERATIONS iterations of BATCH calls each, and prints one JSON line on stdout.
//
// Nothing happens inside the timed region but the calls: the clock is read, the calls are made, the
// clock is read again. Counters, answer checks and bookkeeping happen between iterations.
package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// Op performs one call of the operation being measured and returns its answer (a short string every
// mechanism must agree on) or an error. An error is a failure of the run, never a fast call.
type Op func() (string, error)

// Setup prepares the operation for a parameter (load a plugin, start a VM, build the input row...). It runs
// once, before timing; its duration is reported separately as "setup_s" (start-up cost).
type Setup func(param string) (op Op, cleanup func(), err error)

// Protocol is the value of the "protocol" key of every result.
const Protocol = "bridgebench/1"

// AutoBatch, given to Run as the batch, asks for calibration: K doubles from 1 until one batch of K
// calls takes at least MinBatchSeconds, and is capped at MaxBatch.
const AutoBatch = 0

// Calibration limits (see AutoBatch).
const (
	MinBatchSeconds = 1e-3
	MaxBatch        = 1 << 30
)

// Counters holds the per-iteration counters, one value per iteration, read from runtime/metrics just
// before and just after the timed region. Small-object allocations are accounted by the Go runtime when
// a span leaves a P's cache, so a delta is exact only to within one span (e.g. 128 objects of 64 B);
// divided by the batch this is negligible once batches hold thousands of calls.
type Counters struct {
	BytesPerOp  []float64 `json:"bytes_per_op"`  // heap bytes allocated / batch
	AllocsPerOp []float64 `json:"allocs_per_op"` // heap objects allocated / batch
	GCCycles    []uint64  `json:"gc_cycles"`     // GC cycles completed during the iteration
	// CPU seconds the process used around the iteration (all threads: GC work counts), read just outside
	// the timed region; omitted where the platform has no process CPU clock. Wall time well above it
	// is time the machine took away.
	CPUSeconds []float64 `json:"cpu_s,omitempty"`
}

// Result is one process execution, as printed by Main (protocol bridgebench/1).
type Result struct {
	Protocol         string    `json:"protocol"`
	Times            []float64 `json:"times"` // seconds per iteration (the whole batch)
	Batch            int       `json:"batch"` // calls per iteration
	Calibrated       bool      `json:"calibrated"`
	Answer           string    `json:"answer"`
	Counters         Counters  `json:"counters"`
	SetupS           float64   `json:"setup_s"`     // seconds the Setup took
	PeakRSSKB        int64     `json:"peak_rss_kb"` // VmHWM after the loop (0 where unknown)
	Clock            string    `json:"clock"`       // "CLOCK_MONOTONIC_RAW" or "go monotonic"
	ClockResolutionS float64   `json:"clock_resolution_s"`
	Go               string    `json:"go"`
	GOMAXPROCS       int       `json:"gomaxprocs"`
}

// clock is the probe's monotonic clock; now is in clock_*.go.
type clock struct {
	raw        bool
	name       string
	resolution float64
	base       time.Time
}

var metricNames = [...]string{
	"/gc/heap/allocs:bytes",
	"/gc/heap/allocs:objects",
	"/gc/cycles/total:gc-cycles",
}

type runner struct {
	op      Op
	clk     *clock
	samples []metrics.Sample
	mem     runtime.MemStats // filled by each flush of the allocation counters (flushCounts), then unused
	iter    int              // iteration in progress, for error messages (0: calibration)
	answer  Answer           // nil: the raw result is the answer
	step    *stepper         // nil: iterations back to back (batch mode)
}

// Ready is what a probe in stepped mode says once it is set up (and calibrated).
const Ready = "bridgebench-stepped/1 ready"

// stepper is the stepped mode of the protocol (BRIDGEBENCH_STEPPED=1, bridgebench/lockstep.py): the
// harness says "g" before each iteration, and the probe answers with the iteration's seconds on a line.
type stepper struct {
	in    *bufio.Reader
	out   io.Writer
	ready bool
}

// wait says Ready before the first iteration, then waits for the harness's "g".
func (s *stepper) wait(i int) error {
	if !s.ready {
		if _, err := fmt.Fprintln(s.out, Ready); err != nil {
			return fmt.Errorf("stepped mode: saying ready: %w", err)
		}
		s.ready = true
	}
	b, err := s.in.ReadByte()
	if err != nil {
		return fmt.Errorf("stepped mode: expected \"g\" before iteration %d, got %v", i, err)
	}
	if b != 'g' {
		return fmt.Errorf("stepped mode: expected \"g\" before iteration %d, got %q", i, b)
	}
	return nil
}

func (s *stepper) done(seconds float64) error {
	_, err := fmt.Fprintf(s.out, "%.9e\n", seconds)
	return err
}

// Run does what Main does except reading os.Args, printing and exiting: it calls setup(param), times
// iterations iterations of batch calls each (batch AutoBatch: calibrate), runs cleanup, and returns the
// result. On error the Result holds what was known so far. Panics in setup, op and cleanup are returned
// as errors.
func Run(setup Setup, iterations int, param string, batch int) (Result, error) {
	return RunWith(setup, nil, iterations, param, batch)
}

// Answer turns an op's raw result into the answer that is compared and reported, for example a digest of
// canonical JSON when results are long or their codecs order keys differently. It runs outside the timed
// region, once per iteration, on the last result of the batch.
type Answer func(raw string) (string, error)

// RunWith is Run with an answer transform (nil: the raw result is the answer).
func RunWith(setup Setup, answer Answer, iterations int, param string, batch int) (Result, error) {
	return runWith(setup, answer, iterations, param, batch, nil)
}

func runWith(setup Setup, answer Answer, iterations int, param string, batch int, step *stepper) (Result, error) {
	res := Result{Protocol: Protocol, Go: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	switch {
	case setup == nil:
		return res, errors.New("no setup given")
	case iterations < 1:
		return res, fmt.Errorf("iterations must be positive, got %d", iterations)
	case batch < 0:
		return res, fmt.Errorf("batch must be positive or AutoBatch, got %d", batch)
	}
	clk := newClock()
	res.Clock, res.ClockResolutionS = clk.name, clk.resolution

	var op Op
	var cleanup func()
	var err error
	s0 := clk.now()
	perr := protect(func() { op, cleanup, err = setup(param) })
	res.SetupS = float64(clk.now()-s0) / 1e9
	if perr == nil && err == nil && op == nil {
		err = errors.New("returned no op")
	}
	if perr != nil || err != nil {
		if perr != nil {
			err = perr
		}
		if cleanup != nil {
			_ = protect(cleanup)
		}
		return res, fmt.Errorf("setup(%q) failed: %w", param, err)
	}

	r := newRunner(op, clk)
	r.answer = answer
	r.step = step

	// Pre-allocate everything the loop writes.
	res.Times = make([]float64, iterations)
	res.Counters = Counters{
		BytesPerOp:  make([]float64, iterations),
		AllocsPerOp: make([]float64, iterations),
		GCCycles:    make([]uint64, iterations),
	}
	if processCPU() >= 0 {
		res.Counters.CPUSeconds = make([]float64, iterations)
	}
	var lerr error
	if perr := protect(func() { lerr = r.loop(&res, batch) }); perr != nil {
		if r.iter == 0 {
			lerr = fmt.Errorf("op panicked during calibration: %w", perr)
		} else {
			lerr = fmt.Errorf("op panicked in iteration %d: %w", r.iter, perr)
		}
	}
	res.PeakRSSKB = peakRSSKB()
	if cleanup != nil {
		if perr := protect(cleanup); perr != nil && lerr == nil {
			lerr = fmt.Errorf("cleanup failed: %w", perr)
		}
	}
	return res, lerr
}

func newRunner(op Op, clk *clock) *runner {
	r := &runner{op: op, clk: clk, samples: make([]metrics.Sample, len(metricNames))}
	for i, name := range metricNames {
		r.samples[i].Name = name
	}
	metrics.Read(r.samples) // the first read initialises the runtime's tables: keep it out of the counters
	return r
}

// loop calibrates the batch if asked to, then runs the timed iterations.
func (r *runner) loop(res *Result, batch int) error {
	if batch == AutoBatch {
		k, err := calibrate(func(k int) (int64, error) {
			ns, _, n, err := r.batch(k)
			if err != nil {
				return 0, fmt.Errorf("call %d of calibration batch (K=%d) failed: %w", n+1, k, err)
			}
			return ns, nil
		})
		if err != nil {
			return err
		}
		batch = k
		res.Calibrated = true
	}
	res.Batch = batch
	perCall := 1 / float64(batch)
	// The runtime counts a small object's allocation a span at a time, as a P's cache takes a span, and
	// puts right what the span did not hand out when the caches are flushed. Read between two flushes the
	// counters are exact; read without, an iteration saw a whole span or nothing (a quick run of a call
	// that allocates one object read 0 bytes an operation). So the caches are flushed before each
	// iteration's calls and after them, outside the timed calls (ReadMemStats: a few microseconds here,
	// with the world stopped).
	for i := range res.Times {
		r.iter = i + 1
		if r.step != nil {
			if err := r.step.wait(i + 1); err != nil {
				return err
			}
		}
		r.flushCounts() // not this iteration's: what ran since the last flush (the answer's check, the stepped I/O)
		c0 := processCPU()
		b0, o0, g0 := r.counters()
		countStart()
		ns, ans, n, err := r.batch(batch)
		countStop()
		c1 := processCPU()
		r.flushCounts()
		b1, o1, g1 := r.counters()
		if err != nil {
			return fmt.Errorf("call %d of iteration %d failed: %w", n+1, i+1, err)
		}
		if r.answer != nil {
			if ans, err = r.answer(ans); err != nil {
				return fmt.Errorf("the answer of iteration %d: %w", i+1, err)
			}
		}
		res.Times[i] = float64(ns) / 1e9
		res.Counters.BytesPerOp[i] = float64(b1-b0) * perCall
		res.Counters.AllocsPerOp[i] = float64(o1-o0) * perCall
		res.Counters.GCCycles[i] = g1 - g0
		if res.Counters.CPUSeconds != nil && c0 >= 0 && c1 >= 0 {
			res.Counters.CPUSeconds[i] = float64(c1-c0) / 1e9
		}
		if i == 0 {
			res.Answer = ans
		} else if ans != res.Answer {
			return fmt.Errorf("iteration %d answered differently: %s, iteration 1 answered %s",
				i+1, quote(ans), quote(res.Answer))
		}
		if r.step != nil {
			if err := r.step.done(res.Times[i]); err != nil {
				return fmt.Errorf("stepped mode: answering iteration %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// batch times k calls of the op and returns the elapsed nanoseconds, the last answer, and on error the
// index of the failing call. Between the two clock reads there are only the calls.
func (r *runner) batch(k int) (ns int64, ans string, n int, err error) {
	op := r.op
	t0 := r.clk.now()
	for n = 0; n < k; n++ {
		if ans, err = op(); err != nil {
			break
		}
	}
	t1 := r.clk.now()
	return t1 - t0, ans, n, err
}

// flushCounts makes the allocation counters exact up to now (see the timed loop). It does not allocate.
func (r *runner) flushCounts() {
	runtime.ReadMemStats(&r.mem)
}

// counters reads the cumulative heap allocation and GC counters. It reuses r.samples and does not
// allocate.
func (r *runner) counters() (bytes, objects, cycles uint64) {
	metrics.Read(r.samples)
	return sampleUint64(&r.samples[0]), sampleUint64(&r.samples[1]), sampleUint64(&r.samples[2])
}

func sampleUint64(s *metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// calibrate doubles K from 1 until measure(K) (the nanoseconds a batch of K calls took) reaches
// MinBatchSeconds, or K reaches MaxBatch.
func calibrate(measure func(k int) (int64, error)) (int, error) {
	const minNS = int64(MinBatchSeconds * 1e9)
	for k := 1; ; k *= 2 {
		ns, err := measure(k)
		if err != nil {
			return 0, err
		}
		if ns >= minNS || k >= MaxBatch {
			return k, nil
		}
	}
}

// protect runs f, returning a panic in it as an error that names the panic's value and where it happened.
func protect(f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if where := panicSite(); where != "" {
				err = fmt.Errorf("panic: %v (at %s)", v, where)
			} else {
				err = fmt.Errorf("panic: %v", v)
			}
		}
	}()
	f()
	return nil
}

// panicSite, called from a deferred function while panicking, returns file:line of the code that
// panicked: the first frame outside package runtime below runtime.gopanic.
func panicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	seenPanic := false
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" {
			seenPanic = true
		} else if seenPanic && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		if !more {
			return ""
		}
	}
}

// quote renders an answer for a one-line message, shortened if long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}

// peakRSSKB returns VmHWM from /proc/self/status in kB, or 0 where it cannot be read.
func peakRSSKB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fields := strings.Fields(rest)
			if len(fields) >= 1 {
				if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return kb
				}
			}
			return 0
		}
	}
	return 0
}

// Main runs one process execution: parses os.Args as ITERATIONS PARAM [BATCH], calls setup, then times
// ITERATIONS iterations of BATCH calls each and prints one JSON line (protocol bridgebench/1) on stdout.
// It exits 2 on bad arguments, 1 on a setup or call error (message on stderr, one line, naming the call).
func Main(setup Setup) {
	MainWith(setup, nil)
}

// MainWith is Main with an answer transform (see Answer).
func MainWith(setup Setup, answer Answer) {
	iterations, param, batch, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe: %s; usage: %s ITERATIONS PARAM [BATCH|auto]\n", err, os.Args[0])
		os.Exit(2)
	}
	var step *stepper
	if os.Getenv("BRIDGEBENCH_STEPPED") == "1" {
		step = &stepper{in: bufio.NewReader(os.Stdin), out: os.Stdout}
	}
	res, err := runWith(setup, answer, iterations, param, batch, step)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe: "+oneLine(err.Error()))
		os.Exit(1)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&res); err != nil { // Encode ends the line with '\n'
		fmt.Fprintln(os.Stderr, "probe: encoding the result: "+oneLine(err.Error()))
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(buf.Bytes()); err != nil {
		fmt.Fprintln(os.Stderr, "probe: writing the result: "+oneLine(err.Error()))
		os.Exit(1)
	}
	os.Exit(0)
}

// parseArgs reads ITERATIONS PARAM [BATCH]; BATCH is a positive integer, or "auto" (or absent) for
// calibration.
func parseArgs(args []string) (iterations int, param string, batch int, err error) {
	if len(args) < 2 || len(args) > 3 {
		return 0, "", 0, fmt.Errorf("want 2 or 3 arguments, got %d", len(args))
	}
	iterations, err = strconv.Atoi(args[0])
	if err != nil || iterations < 1 {
		return 0, "", 0, fmt.Errorf("ITERATIONS must be a positive integer, got %q", args[0])
	}
	param = args[1]
	batch = AutoBatch
	if len(args) == 3 && args[2] != "auto" {
		batch, err = strconv.Atoi(args[2])
		if err != nil || batch < 1 {
			return 0, "", 0, fmt.Errorf("BATCH must be a positive integer or \"auto\", got %q", args[2])
		}
	}
	return iterations, param, batch, nil
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(strings.TrimSpace(s))
}
