package bench

import (
	"encoding/json"
	"math"
	"slices"
	"sync"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample such that at least p percent of
// the samples are at or below it. It returns 0 for no samples; p <= 0 gives
// the minimum.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// Summary describes a set of latency samples.
type Summary struct {
	Count int           `json:"count"`
	Min   time.Duration `json:"-"`
	P50   time.Duration `json:"-"`
	P90   time.Duration `json:"-"`
	P99   time.Duration `json:"-"`
	Max   time.Duration `json:"-"`
	Mean  time.Duration `json:"-"`
}

// Summarize computes a Summary of samples without modifying them.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var total time.Duration
	for _, d := range s {
		total += d
	}
	return Summary{
		Count: len(s),
		Min:   s[0],
		P50:   Percentile(s, 50),
		P90:   Percentile(s, 90),
		P99:   Percentile(s, 99),
		Max:   s[len(s)-1],
		Mean:  total / time.Duration(len(s)),
	}
}

// summaryJSON is Summary with durations in milliseconds.
type summaryJSON struct {
	Count  int     `json:"count"`
	MinMs  float64 `json:"minMs"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
	MeanMs float64 `json:"meanMs"`
}

// Ms converts d to fractional milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MarshalJSON writes durations as fractional milliseconds.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{
		Count: s.Count, MinMs: Ms(s.Min), P50Ms: Ms(s.P50), P90Ms: Ms(s.P90),
		P99Ms: Ms(s.P99), MaxMs: Ms(s.Max), MeanMs: Ms(s.Mean),
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	d := func(ms float64) time.Duration { return time.Duration(math.Round(ms * float64(time.Millisecond))) }
	*s = Summary{Count: j.Count, Min: d(j.MinMs), P50: d(j.P50Ms), P90: d(j.P90Ms), P99: d(j.P99Ms), Max: d(j.MaxMs), Mean: d(j.MeanMs)}
	return nil
}

// Recorder collects latency samples and error counts per operation name.
// It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	samples map[string][]time.Duration
	errors  map[string]int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{samples: map[string][]time.Duration{}, errors: map[string]int{}}
}

// Add records one successful operation that took d.
func (r *Recorder) Add(op string, d time.Duration) {
	r.mu.Lock()
	r.samples[op] = append(r.samples[op], d)
	r.mu.Unlock()
}

// Fail records one failed operation.
func (r *Recorder) Fail(op string) {
	r.mu.Lock()
	r.errors[op]++
	r.mu.Unlock()
}

// OpStats is the summary of one operation.
type OpStats struct {
	Op      string  `json:"op"`
	Errors  int     `json:"errors"`
	Latency Summary `json:"latency"`
}

// Stats returns one OpStats per operation seen, in the order of order
// first and then by name.
func (r *Recorder) Stats(order ...string) []OpStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := map[string]bool{}
	for k := range r.samples {
		names[k] = true
	}
	for k := range r.errors {
		names[k] = true
	}
	var out []OpStats
	for _, op := range order {
		if names[op] {
			out = append(out, OpStats{Op: op, Errors: r.errors[op], Latency: Summarize(r.samples[op])})
			delete(names, op)
		}
	}
	rest := make([]string, 0, len(names))
	for k := range names {
		rest = append(rest, k)
	}
	slices.Sort(rest)
	for _, op := range rest {
		out = append(out, OpStats{Op: op, Errors: r.errors[op], Latency: Summarize(r.samples[op])})
	}
	return out
}

// Total returns how many operations succeeded and failed.
func (r *Recorder) Total() (ok, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.samples {
		ok += len(s)
	}
	for _, n := range r.errors {
		failed += n
	}
	return ok, failed
}
