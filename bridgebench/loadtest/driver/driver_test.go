package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests drive real servers on 127.0.0.1 for well under a second each. What they assert holds on any
// machine, however slow or busy: every scheduled request is accounted for, and a server that sleeps cannot
// answer faster than its sleep.

func plan(t *testing.T, server *httptest.Server, rate float64, connections int, duration time.Duration) Plan {
	t.Helper()
	addr := strings.TrimPrefix(server.URL, "http://")
	spec := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(spec, []byte(`{"variants": [{"name": "get", "weight": 1, "method": "GET", "path": "/"}]}`),
		0o644); err != nil {
		t.Fatal(err)
	}
	reqs, names, err := requests(spec, addr)
	if err != nil {
		t.Fatal(err)
	}
	return Plan{Addr: addr, Requests: reqs, Names: names, Rate: rate, Connections: connections, Duration: duration}
}

func errorCount(t *tally) int64 {
	n := int64(0)
	for _, v := range t.errors {
		n += v
	}
	return n
}

func TestEveryScheduledRequestIsAccountedFor(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	defer server.Close()
	// 400 a second for 0.5 s: requests 0..199 are scheduled inside the run.
	got := Run(plan(t, server, 400, 4, 500*time.Millisecond), time.Now().Add(10*time.Millisecond))
	if total := got.completed + got.censored + errorCount(got); total != 200 {
		t.Fatalf("completed %d + censored %d + errors %v = %d, want the 200 scheduled", got.completed, got.censored,
			got.errors, total)
	}
	if got.statuses[200] != got.completed || got.latency.TotalCount() != got.completed+got.censored {
		t.Fatalf("statuses %v, latency count %d, completed %d", got.statuses, got.latency.TotalCount(), got.completed)
	}
}

func TestASlowServerIsCensoredAtTheEndNotDropped(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(200 * time.Millisecond)
		_, _ = w.Write([]byte("slow"))
	}))
	defer server.Close()
	// One connection, 50 a second for 1 s: the server answers at most one request per 200 ms, so at most 5
	// complete; the other 45 or more are censored at (end - intended), the earliest of them near 0.9 s.
	got := Run(plan(t, server, 50, 1, time.Second), time.Now().Add(10*time.Millisecond))
	if got.completed > 5 || got.completed+got.censored != 50 || errorCount(got) != 0 {
		t.Fatalf("completed %d, censored %d, errors %v; want at most 5 completed and the rest censored",
			got.completed, got.censored, got.errors)
	}
	// Request i is intended at 20i ms and is either answered after 200 ms or more, or censored at
	// 1 s - 20i ms: the median of the 50 is near 0.5 s. Timing from the actual send instead (coordinated
	// omission) would give 0.2 s for the answered and nothing for the unsent.
	p50, max := float64(got.latency.ValueAtQuantile(50))/1e6, float64(got.latency.Max())/1e6
	if got.latency.TotalCount() != 50 || p50 < 0.4 || max < 0.85 {
		t.Fatalf("latency count %d, p50 %.3f s, max %.3f s: the requests queued behind the slow ones were not "+
			"timed from their intended start", got.latency.TotalCount(), p50, max)
	}
	if p50 := float64(got.service.ValueAtQuantile(50)) / 1e6; got.completed > 0 && p50 < 0.19 {
		t.Fatalf("service p50 %.3f s is below the server's 0.2 s sleep", p50)
	}
}

func TestClosedLoopMeasuresServiceTimeAndCensorsNothing(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest) // a validator's "no" is an answer, not an error
		_, _ = w.Write([]byte(strings.Repeat("x", 3000)))
	}))
	defer server.Close()
	got := Run(plan(t, server, 0, 2, time.Second), time.Now()) // a second in which to answer at least once
	if got.completed == 0 || got.censored != 0 || errorCount(got) != 0 || got.statuses[400] != got.completed {
		t.Fatalf("completed %d, censored %d, errors %v, statuses %v", got.completed, got.censored, got.errors,
			got.statuses)
	}
}

func TestChunkedAndClosingResponsesAreRead(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("close") != "" {
			w.Header().Set("Connection", "close")
		}
		for i := 0; i < 3; i++ { // flushed parts: the response is chunked
			_, _ = w.Write([]byte("part"))
			w.(http.Flusher).Flush()
		}
	}))
	defer server.Close()
	p := plan(t, server, 200, 1, 200*time.Millisecond)
	p.Requests = append(p.Requests, []byte(strings.Replace(string(p.Requests[0]), "GET / ", "GET /?close=1 ", 1)))
	p.Names = append(p.Names, "close")
	got := Run(p, time.Now().Add(10*time.Millisecond))
	if got.completed+got.censored != 40 || errorCount(got) != 0 || got.variants["close"] == 0 {
		t.Fatalf("completed %d, censored %d, errors %v, variants %v", got.completed, got.censored, got.errors,
			got.variants)
	}
}

func TestARefusedConnectionIsAnErrorByKind(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	_ = listener.Close() // nothing listens there now
	server := httptest.NewUnstartedServer(http.NotFoundHandler())
	p := plan(t, server, 100, 1, 100*time.Millisecond)
	p.Addr = addr
	got := Run(p, time.Now().Add(10*time.Millisecond))
	if got.errors["refused"] == 0 || got.completed != 0 || got.completed+got.censored+errorCount(got) != 10 {
		t.Fatalf("errors %v, completed %d, censored %d", got.errors, got.completed, got.censored)
	}
}

func TestMixSpreadsVariantsByWeight(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "body.json"), []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(spec, []byte(`{"variants": [
		{"name": "valid", "weight": 3, "method": "POST", "path": "/u/1", "headers": {"X-Id": "7"}, "body_file": "body.json"},
		{"name": "invalid", "weight": 1, "method": "POST", "path": "/u/0"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs, names, err := requests(spec, "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "valid,valid,invalid,valid" && strings.Join(names, ",") != "valid,invalid,valid,valid" {
		t.Fatalf("mix %v", names)
	}
	want := "POST /u/1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-Id: 7\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
	if string(reqs[0]) != want {
		t.Fatalf("request %q, want %q", reqs[0], want)
	}
	for _, bad := range []string{`{"variants": []}`, `{"variants": [{"name": "x", "weight": 0, "method": "GET", "path": "/"}]}`,
		`{"variants": [{"name": "x", "weight": 1, "method": "GET", "path": "nope"}]}`, `not json`} {
		if err := os.WriteFile(spec, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := requests(spec, "127.0.0.1:9"); err == nil {
			t.Fatalf("spec %s was accepted", bad)
		}
	}
}

func TestMergedRunsHaveThePercentilesOfAllTheirRequests(t *testing.T) {
	all := newHist()
	var results []Result
	for run := 0; run < 3; run++ {
		one := newTally()
		for v := int64(1); v <= 1000; v++ {
			value := v * int64(run+1) * 37 // three runs with different spreads
			one.latency.RecordValue(value)
			all.RecordValue(value)
		}
		one.completed = 1000
		one.statuses[200] = 1000
		results = append(results, result(one, Plan{Rate: 100, Connections: 1, Duration: time.Second}))
	}
	merged, err := merge(results)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Completed != 3000 || merged.Statuses["200"] != 3000 || merged.Merged != 3 || merged.AchievedRate != 1000 {
		t.Fatalf("merged counts %+v", merged)
	}
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 50}, {"p99", 99}, {"max", 100}} {
		if want := float64(all.ValueAtQuantile(q.q)) / 1e6; merged.Latency[q.name] != want {
			t.Fatalf("%s %g, want %g", q.name, merged.Latency[q.name], want)
		}
	}
	decoded, err := decode(merged.Histograms["latency"])
	if err != nil || !decoded.Equals(all) {
		t.Fatalf("merged histogram differs from one of all values (%v)", err)
	}
	results[1].Histograms["latency"] = "not base64!"
	if _, err := merge(results); err == nil {
		t.Fatal("a damaged histogram was merged")
	}
}

func TestEveryConnectionGoesRoundTheWholeMix(t *testing.T) {
	// Counted under a lock, not sent down a channel: a fast machine may answer more requests than any buffer.
	var mu sync.Mutex
	paths := map[string]map[string]int{} // per connection (the client's address): requests per path
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if paths[r.RemoteAddr] == nil {
			paths[r.RemoteAddr] = map[string]int{}
		}
		paths[r.RemoteAddr][r.URL.Path]++
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	defer server.Close()
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	// A mix of 4 (3 + 1) and 4 connections: each connection must still send both variants.
	if err := os.WriteFile(spec, []byte(`{"variants": [{"name": "a", "weight": 3, "method": "GET", "path": "/a"},
		{"name": "b", "weight": 1, "method": "GET", "path": "/b"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(server.URL, "http://")
	reqs, names, err := requests(spec, addr)
	if err != nil {
		t.Fatal(err)
	}
	got := Run(Plan{Addr: addr, Requests: reqs, Names: names, Rate: 0, Connections: 4, Duration: 300 * time.Millisecond},
		time.Now())
	mu.Lock()
	defer mu.Unlock()
	for conn, count := range paths {
		if count["/a"] >= 4 && count["/b"] == 0 { // four or more requests go round the mix of four at least once
			t.Fatalf("connection %s sent only /a: %v", conn, count)
		}
	}
	if got.answered < got.completed || got.answered == 0 {
		t.Fatalf("answered %d, completed %d", got.answered, got.completed)
	}
}

func TestWholeRunCountsBoundWhatTheServerCounted(t *testing.T) {
	// The server counts every request it handles, by path; what the driver says it answered (warm-up
	// included) can be no more than that, and what it wrote no less.
	var mu sync.Mutex
	counted := map[string]int64{}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		counted[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = w.Write([]byte("ok"))
	}))
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(spec, []byte(`{"variants": [{"name": "a", "weight": 2, "method": "GET", "path": "/a"},
		{"name": "missing", "weight": 1, "method": "GET", "path": "/missing"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(server.URL, "http://")
	reqs, names, err := requests(spec, addr)
	if err != nil {
		t.Fatal(err)
	}
	got := Run(Plan{Addr: addr, Requests: reqs, Names: names, Rate: 0, Connections: 3, Warmup: 100 * time.Millisecond,
		Duration: 200 * time.Millisecond}, time.Now())
	server.Close() // waits for every handler: the counts are final
	res := result(got, Plan{Rate: 0, Connections: 3, Duration: 200 * time.Millisecond})
	mu.Lock()
	defer mu.Unlock()
	for name, path := range map[string]string{"a": "/a", "missing": "/missing"} {
		if res.AnsweredVariants[name] == 0 || res.AnsweredVariants[name] > counted[path] ||
			counted[path] > res.AttemptedVariants[name] {
			t.Fatalf("%s: answered %d, server counted %d, attempted %d", name, res.AnsweredVariants[name],
				counted[path], res.AttemptedVariants[name])
		}
	}
	if res.AnsweredStatuses["404"] != res.AnsweredVariants["missing"] ||
		res.AnsweredStatuses["200"] != res.AnsweredVariants["a"] || res.Answered != res.AnsweredVariants["a"]+
		res.AnsweredVariants["missing"] {
		t.Fatalf("answered statuses %v, variants %v, answered %d", res.AnsweredStatuses, res.AnsweredVariants,
			res.Answered)
	}
	merged, err := merge([]Result{res, res})
	if err != nil || merged.AnsweredVariants["a"] != 2*res.AnsweredVariants["a"] ||
		merged.AnsweredStatuses["404"] != 2*res.AnsweredStatuses["404"] {
		t.Fatalf("merge of the whole-run counts: %v %v", merged.AnsweredVariants, err)
	}
}
