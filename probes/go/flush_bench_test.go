package probe

import (
	"math/rand"
	"sort"
	"testing"
	"time"
)

// What flushing the allocation counters before an iteration (flushCounts) costs the iteration's timed calls:
// afterwards each size class the calls use takes a fresh span from the heap. An iteration here is `calls` calls
// that allocate objects of eight small sizes; iterations flushed before and iterations not are drawn at random
// and interleaved, so that the machine's swings fall on both, and the benchmark reports each one's median and
// their ratio:
//
//	go test -run '^$' -bench FlushCost -count 5 ./probes/go
//
// (a benchmark of the probe, not a test: `go test` without -bench does not run it).
var flushSink []byte

// calls makes an iteration about a millisecond here, the shortest the probe times (MinBatchSeconds).
const calls = 40000

func allocatingCalls() {
	for j := 0; j < calls; j++ {
		flushSink = make([]byte, 16+(j%8)*16)
	}
}

func BenchmarkFlushCost(b *testing.B) {
	var r runner
	allocatingCalls()
	draws := rand.New(rand.NewSource(1))
	var flushed, unflushed []float64
	for i := 0; i < b.N; i++ {
		flush := draws.Intn(2) == 0
		if flush {
			r.flushCounts()
		}
		t0 := time.Now()
		allocatingCalls()
		ns := float64(time.Since(t0).Nanoseconds())
		if flush {
			flushed = append(flushed, ns)
		} else {
			unflushed = append(unflushed, ns)
		}
	}
	if len(flushed) == 0 || len(unflushed) == 0 {
		return
	}
	f, u := median(flushed), median(unflushed)
	b.ReportMetric(f, "flushed-ns/iteration")
	b.ReportMetric(u, "unflushed-ns/iteration")
	b.ReportMetric(f/u, "ratio")
}

func median(x []float64) float64 {
	sort.Float64s(x)
	return x[len(x)/2]
}
