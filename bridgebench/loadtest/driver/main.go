// Command loaddriver is bridgebench's load driver: an open-model constant-rate HTTP/1.1 generator that
// times each request from its intended send time (free of coordinated omission) into HdrHistograms, and a
// closed-loop mode to find a server's saturation rate.
//
//	loaddriver run -spec SPEC.json -addr 127.0.0.1:PORT [-rate R] [-connections C] [-warmup 1s] [-duration 5s]
//	loaddriver merge RESULT.json...   (merges runs' histograms; prints the merged percentiles)
//
// The spec lists request variants and their weights: {"variants": [{"name": "valid", "weight": 9,
// "method": "POST", "path": "/users/1?limit=10", "headers": {"X-Request-Id": "1"}, "body_file": "ok.json"}]}
// (body_file relative to the spec). One JSON object is printed on stdout (protocol bridgebench-load/1).
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Protocol is the value of the "protocol" key of every result.
const Protocol = "bridgebench-load/1"

type variantSpec struct {
	Name     string            `json:"name"`
	Weight   int               `json:"weight"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Headers  map[string]string `json:"headers"`
	BodyFile string            `json:"body_file"`
}

type spec struct {
	Variants []variantSpec `json:"variants"`
}

// Result is one load run as printed.
type Result struct {
	Protocol     string           `json:"protocol"`
	Mode         string           `json:"mode"`
	IntendedRate float64          `json:"intended_rate,omitempty"`
	AchievedRate float64          `json:"achieved_rate"`
	Connections  int              `json:"connections"`
	WarmupS      float64          `json:"warmup_s"`
	DurationS    float64          `json:"duration_s"`
	Sent         int64            `json:"sent"`
	Completed    int64            `json:"completed"`
	Censored     int64            `json:"censored"`
	Answered     int64            `json:"answered"` // answers in the whole run, warm-up included
	Errors       map[string]int64 `json:"errors"`
	Statuses     map[string]int64 `json:"statuses"`
	Variants     map[string]int64 `json:"variants"`
	// The whole run's, warm-up included (for checking a server's own totals): written, answered, by status.
	AttemptedVariants map[string]int64   `json:"attempted_variants"`
	AnsweredVariants  map[string]int64   `json:"answered_variants"`
	AnsweredStatuses  map[string]int64   `json:"answered_statuses"`
	Latency           map[string]float64 `json:"latency"`
	Service           map[string]float64 `json:"service"`
	Lag               map[string]float64 `json:"lag"`
	Histograms        map[string]string  `json:"histograms"`   // base64 HdrHistogram V2, microseconds
	Distribution      [][2]float64       `json:"distribution"` // latency: [percentile, seconds], for plots
	Merged            int                `json:"merged,omitempty"`
}

// requests serialises the spec's variants and lays them out in a mix that repeats every sum(weights)
// requests, each variant spread evenly through it.
func requests(specPath, addr string) ([][]byte, []string, error) {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return nil, nil, err
	}
	var s spec
	if err = json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", specPath, err)
	}
	if len(s.Variants) == 0 {
		return nil, nil, fmt.Errorf("%s: no variants", specPath)
	}
	type weighted struct {
		name    string
		request []byte
		weight  int
	}
	var all []weighted
	for _, v := range s.Variants {
		if v.Weight < 1 || v.Method == "" || !strings.HasPrefix(v.Path, "/") || v.Name == "" {
			return nil, nil, fmt.Errorf("%s: variant %q needs a name, a weight of at least 1, a method and a path "+
				"starting with /", specPath, v.Name)
		}
		var body []byte
		if v.BodyFile != "" {
			path := v.BodyFile
			if !filepath.IsAbs(path) { // relative to the spec file
				path = filepath.Join(filepath.Dir(specPath), path)
			}
			if body, err = os.ReadFile(path); err != nil {
				return nil, nil, err
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", v.Method, v.Path, addr)
		names := make([]string, 0, len(v.Headers))
		for k := range v.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v.Headers[k])
		}
		if body != nil || v.Method == "POST" || v.Method == "PUT" {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
		}
		b.WriteString("\r\n")
		b.Write(body)
		all = append(all, weighted{v.Name, []byte(b.String()), v.Weight})
	}
	// Smooth weighted round robin: the mix is deterministic and each variant is spread out.
	total := 0
	for _, w := range all {
		total += w.weight
	}
	current := make([]int, len(all))
	var reqs [][]byte
	var names []string
	for n := 0; n < total; n++ {
		best := 0
		for i, w := range all {
			current[i] += w.weight
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		reqs = append(reqs, all[best].request)
		names = append(names, all[best].name)
	}
	return reqs, names, nil
}

func encode(h *hdrhistogram.Histogram) string {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		panic(err) // encoding a histogram this program made cannot fail
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decode(s string) (*hdrhistogram.Histogram, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return hdrhistogram.Decode(b)
}

func result(t *tally, p Plan) Result {
	statuses, answeredStatuses := map[string]int64{}, map[string]int64{}
	for k, v := range t.statuses {
		statuses[strconv.Itoa(k)] = v
	}
	for k, v := range t.answeredStatuses {
		answeredStatuses[strconv.Itoa(k)] = v
	}
	mode := "constant-rate"
	if p.Rate == 0 {
		mode = "closed-loop"
	}
	return Result{
		Protocol: Protocol, Mode: mode, IntendedRate: p.Rate, Connections: p.Connections,
		AchievedRate: float64(t.completed) / p.Duration.Seconds(),
		WarmupS:      p.Warmup.Seconds(), DurationS: p.Duration.Seconds(),
		Sent: t.sent, Completed: t.completed, Censored: t.censored, Answered: t.answered,
		Errors: t.errors, Statuses: statuses, Variants: t.variants,
		AttemptedVariants: t.attemptedVariants, AnsweredVariants: t.answeredVariants,
		AnsweredStatuses: answeredStatuses,
		Latency:          percentiles(t.latency), Service: percentiles(t.service), Lag: percentiles(t.lag),
		Histograms: map[string]string{"latency": encode(t.latency), "service": encode(t.service),
			"lag": encode(t.lag)},
		Distribution: distribution(t.latency),
	}
}

func runCommand(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	specPath := fs.String("spec", "", "request spec (JSON)")
	addr := fs.String("addr", "", "server address, 127.0.0.1:PORT")
	rate := fs.Float64("rate", 0, "intended requests a second (0: closed loop, to find saturation)")
	connections := fs.Int("connections", 16, "keep-alive connections")
	warmup := fs.Duration("warmup", time.Second, "sent, not recorded")
	duration := fs.Duration("duration", 5*time.Second, "recorded; the run ends at warmup + duration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *specPath == "" || !strings.HasPrefix(*addr, "127.0.0.1:") {
		return errors.New("run needs -spec and -addr 127.0.0.1:PORT (load goes to this machine only)")
	}
	if *rate < 0 || *connections < 1 || *duration <= 0 || *warmup < 0 || *duration+*warmup > time.Hour {
		return errors.New("-rate must be at least 0, -connections at least 1, -duration above 0, and the run " +
			"at most an hour")
	}
	reqs, names, err := requests(*specPath, *addr)
	if err != nil {
		return err
	}
	plan := Plan{Addr: *addr, Requests: reqs, Names: names, Rate: *rate, Connections: *connections,
		Warmup: *warmup, Duration: *duration}
	t := Run(plan, time.Now().Add(10*time.Millisecond))
	return json.NewEncoder(os.Stdout).Encode(result(t, plan))
}

// merge adds up several runs (the process executions of one rate): counts, and histograms merged, so the
// percentiles are those of every request of every run.
func merge(results []Result) (Result, error) {
	total := newTally()
	for n, r := range results {
		if r.Protocol != Protocol {
			return Result{}, fmt.Errorf("result %d: not a %s result", n+1, Protocol)
		}
		one := newTally()
		var err error
		for name, h := range map[string]**hdrhistogram.Histogram{"latency": &one.latency, "service": &one.service,
			"lag": &one.lag} {
			if *h, err = decode(r.Histograms[name]); err != nil {
				return Result{}, fmt.Errorf("result %d: histogram %s: %w", n+1, name, err)
			}
		}
		one.sent, one.completed, one.censored, one.answered = r.Sent, r.Completed, r.Censored, r.Answered
		for k, v := range r.Errors {
			one.errors[k] = v
		}
		for k, v := range r.Statuses {
			code, _ := strconv.Atoi(k)
			one.statuses[code] = v
		}
		for k, v := range r.Variants {
			one.variants[k] = v
		}
		for k, v := range r.AttemptedVariants {
			one.attemptedVariants[k] = v
		}
		for k, v := range r.AnsweredVariants {
			one.answeredVariants[k] = v
		}
		for k, v := range r.AnsweredStatuses {
			code, _ := strconv.Atoi(k)
			one.answeredStatuses[code] = v
		}
		total.merge(one)
	}
	if len(results) == 0 {
		return Result{}, errors.New("nothing to merge")
	}
	first := results[0]
	plan := Plan{Rate: first.IntendedRate, Connections: first.Connections,
		Duration: time.Duration(first.DurationS * float64(len(results)) * float64(time.Second)),
		Warmup:   time.Duration(first.WarmupS * float64(time.Second))}
	merged := result(total, plan)
	merged.Merged = len(results)
	return merged, nil
}

func mergeCommand(files []string) error {
	var results []Result
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var r Result
		if err = json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		results = append(results, r)
	}
	merged, err := merge(results)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(merged)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loaddriver run|merge ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCommand(os.Args[2:])
	case "merge":
		err = mergeCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (run, merge)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loaddriver:", err)
		os.Exit(2)
	}
}
