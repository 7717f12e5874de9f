package main

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Plan is one load run: where, what, how fast, for how long.
type Plan struct {
	Addr        string
	Requests    [][]byte // the serialised requests in their mix order; request i is Requests[i%len]
	Names       []string // the variant each request of Requests belongs to
	Rate        float64  // intended requests a second over all connections; 0: closed loop (saturation)
	Connections int
	Warmup      time.Duration // sent but not recorded
	Duration    time.Duration // recorded; the run ends at start + Warmup + Duration, a hard bound
}

// Latencies are recorded in microseconds, from 1 µs to 10 minutes, to 3 significant digits.
const (
	histMin    = 1
	histMax    = 600_000_000
	histDigits = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

func micros(d time.Duration) int64 {
	us := d.Microseconds()
	if us < histMin {
		return histMin
	}
	if us > histMax {
		return histMax
	}
	return us
}

// tally is what one connection saw; the connections' tallies are merged at the end.
type tally struct {
	sent, completed, censored int64
	answered                  int64 // every answer, the warm-up's included: did the server answer at all?
	// Over the whole run, the warm-up's included, for a server's own totals to be checked against: what was
	// written to the server (an upper bound on what it could have counted) and what it answered, by variant
	// and by status.
	attemptedVariants, answeredVariants map[string]int64
	answeredStatuses                    map[int]int64
	errors                              map[string]int64
	statuses                            map[int]int64
	variants                            map[string]int64
	latency, service, lag               *hdrhistogram.Histogram
}

func newTally() *tally {
	return &tally{errors: map[string]int64{}, statuses: map[int]int64{}, variants: map[string]int64{},
		attemptedVariants: map[string]int64{}, answeredVariants: map[string]int64{},
		answeredStatuses: map[int]int64{}, latency: newHist(), service: newHist(), lag: newHist()}
}

func (t *tally) merge(o *tally) {
	t.sent += o.sent
	t.completed += o.completed
	t.censored += o.censored
	t.answered += o.answered
	for k, v := range o.errors {
		t.errors[k] += v
	}
	for k, v := range o.statuses {
		t.statuses[k] += v
	}
	for k, v := range o.variants {
		t.variants[k] += v
	}
	for k, v := range o.attemptedVariants {
		t.attemptedVariants[k] += v
	}
	for k, v := range o.answeredVariants {
		t.answeredVariants[k] += v
	}
	for k, v := range o.answeredStatuses {
		t.answeredStatuses[k] += v
	}
	t.latency.Merge(o.latency)
	t.service.Merge(o.service)
	t.lag.Merge(o.lag)
}

// release is how the pacer hands requests to a connection: due counts the connection's requests whose
// intended time has come, wake nudges it (a buffer of one, never blocking the pacer).
type release struct {
	due  atomic.Int64
	wake chan struct{}
}

// Run drives the server and returns the merged tally. Open model (Rate > 0): one pacer releases request i
// at its intended time start + i/Rate, to connection i mod C, whether or not the server kept up; a request
// is timed from its intended time, so waiting behind a busy connection counts as latency (no coordinated
// omission). Requests whose intended time falls in the recorded window but that have not completed by the
// end are censored: recorded at end - intended time, and counted. The pacer's own lateness is the dispatch
// lag. Closed loop (Rate = 0): each connection sends back to back, and latency is the service time.
func Run(p Plan, start time.Time) *tally {
	recordFrom := start.Add(p.Warmup)
	end := recordFrom.Add(p.Duration)
	tallies := make([]*tally, p.Connections)
	releases := make([]*release, p.Connections)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for j := range tallies {
		tallies[j] = newTally()
		releases[j] = &release{wake: make(chan struct{}, 1)}
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			drive(p, j, start, recordFrom, end, tallies[j], releases[j], stop)
		}(j)
	}
	lag := newHist()
	if p.Rate > 0 {
		pace(p, start, recordFrom, end, releases, lag)
	} else {
		time.Sleep(time.Until(end))
	}
	close(stop)
	wg.Wait()
	total := newTally()
	for _, t := range tallies {
		total.merge(t)
	}
	total.lag.Merge(lag)
	return total
}

// pace releases every request whose intended time is before the end, in order, and records how late it was.
// It sleeps until the next intended time and then releases all that are due: a spinning pacer would starve
// the connections of the one core the driver has (the Go scheduler polls the network late while a goroutine
// stays runnable), and an OS sleep wakes up to a millisecond late, so releases come in small bursts whose
// lateness is the dispatch lag, and every request is still timed from its intended time.
func pace(p Plan, start, recordFrom, end time.Time, releases []*release, lag *hdrhistogram.Histogram) {
	for i := 0; ; {
		now := time.Now()
		for ; ; i++ {
			intended := intendedTime(p, start, i)
			if !intended.Before(end) {
				return
			}
			if intended.After(now) {
				break
			}
			if !intended.Before(recordFrom) {
				lag.RecordValue(micros(now.Sub(intended)))
			}
			r := releases[i%p.Connections]
			r.due.Add(1)
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
		time.Sleep(time.Until(intendedTime(p, start, i)))
	}
}

func intendedTime(p Plan, start time.Time, i int) time.Time {
	return start.Add(time.Duration(float64(i) / p.Rate * float64(time.Second)))
}

func drive(p Plan, j int, start, recordFrom, end time.Time, t *tally, r *release, stop <-chan struct{}) {
	var c *conn
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	openLoop := p.Rate > 0
	for k := 0; ; k++ {
		i := j + k*p.Connections
		intended := time.Now()
		if openLoop {
			intended = intendedTime(p, start, i)
			if !intended.Before(end) {
				return
			}
			for r.due.Load() <= int64(k) {
				select {
				case <-r.wake:
				case <-stop:
				}
				if !time.Now().Before(end) {
					break
				}
			}
		}
		sent := time.Now()
		if !sent.Before(end) {
			if openLoop { // everything still scheduled before the end is censored, unsent
				for kk := k; ; kk++ {
					at := intendedTime(p, start, j+kk*p.Connections)
					if !at.Before(end) {
						break
					}
					if !at.Before(recordFrom) {
						t.censored++
						t.latency.RecordValue(micros(end.Sub(at)))
					}
				}
			}
			return
		}
		recorded := !intended.Before(recordFrom)
		if c == nil {
			var err error
			if c, err = dial(p.Addr, end); err != nil {
				c = nil
				if recorded {
					t.errors[errKind(err)]++
				}
				if !openLoop {
					time.Sleep(time.Millisecond) // a refused closed loop must not spin
				}
				continue
			}
		}
		// The connection's k-th request takes the mix's (j+k)-th: each connection goes round the whole mix,
		// whatever the number of connections (i mod len would give connection j the same variant for ever
		// when the connections are a multiple of the mix, and a stuck connection would take a variant away).
		n := (j + k) % len(p.Requests)
		t.attemptedVariants[p.Names[n]]++
		status, keepAlive, err := c.roundTrip(p.Requests[n], end)
		done := time.Now()
		if err == nil {
			t.answered++
			t.answeredVariants[p.Names[n]]++
			t.answeredStatuses[status]++
		}
		if recorded {
			t.sent++
			t.variants[p.Names[n]]++
		}
		switch {
		case err != nil && !done.Before(end): // the hard bound cut it off: censored, not an error
			if recorded && openLoop {
				t.censored++
				t.latency.RecordValue(micros(end.Sub(intended)))
			}
		case err != nil:
			if recorded {
				t.errors[errKind(err)]++
			}
		default:
			if recorded {
				t.completed++
				t.statuses[status]++
				t.latency.RecordValue(micros(done.Sub(intended)))
				t.service.RecordValue(micros(done.Sub(sent)))
			}
		}
		if err != nil || !keepAlive {
			c.close()
			c = nil
		}
	}
}

// percentiles of a histogram, in seconds.
func percentiles(h *hdrhistogram.Histogram) map[string]float64 {
	out := map[string]float64{"count": float64(h.TotalCount())}
	if h.TotalCount() == 0 {
		return out
	}
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}} {
		out[q.name] = float64(h.ValueAtQuantile(q.q)) / 1e6
	}
	out["max"] = float64(h.Max()) / 1e6
	out["mean"] = h.Mean() / 1e6
	return out
}

// distribution of a histogram for an HdrHistogram-style plot: [percentile, seconds] at percentiles
// 100(1 - 10^(-k/4)) for k = 0..20 (0 % to 99.999 %), then the maximum as 100 %.
func distribution(h *hdrhistogram.Histogram) [][2]float64 {
	if h.TotalCount() == 0 {
		return nil
	}
	out := make([][2]float64, 0, 22)
	for k := 0; k <= 20; k++ {
		q := 100 * (1 - math.Pow(10, -float64(k)/4))
		out = append(out, [2]float64{q, float64(h.ValueAtQuantile(q)) / 1e6})
	}
	return append(out, [2]float64{100, float64(h.Max()) / 1e6})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
