package bench

import (
	"encoding/json"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one p50", ms(7), 50, 7 * time.Millisecond},
		{"one p99", ms(7), 99, 7 * time.Millisecond},
		{"two p50 is the lower", ms(1, 2), 50, 1 * time.Millisecond},
		{"two p51 is the upper", ms(1, 2), 51, 2 * time.Millisecond},
		{"four p50", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"four p75", ms(1, 2, 3, 4), 75, 3 * time.Millisecond},
		{"four p99", ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{"hundred p50", hundred, 50, 50 * time.Millisecond},
		{"hundred p90", hundred, 90, 90 * time.Millisecond},
		{"hundred p99", hundred, 99, 99 * time.Millisecond},
		{"hundred p99.5", hundred, 99.5, 100 * time.Millisecond},
		{"p0 is the minimum", ms(3, 4), 0, 3 * time.Millisecond},
		{"p100 is the maximum", ms(3, 4), 100, 4 * time.Millisecond},
		{"above 100 is the maximum", ms(3, 4), 150, 4 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Percentile(c.sorted, c.p); got != c.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	in := ms(5, 1, 4, 2, 3)
	s := Summarize(in)
	want := Summary{Count: 5, Min: ms(1)[0], P50: ms(3)[0], P90: ms(5)[0], P99: ms(5)[0], Max: ms(5)[0], Mean: ms(3)[0]}
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if in[0] != 5*time.Millisecond {
		t.Errorf("Summarize sorted its input in place: %v", in)
	}
	if z := Summarize(nil); z != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", z)
	}
}

func TestSummaryJSON(t *testing.T) {
	s := Summarize(ms(1, 2, 3))
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["count"] != 3 || m["p50Ms"] != 2 || m["maxMs"] != 3 || m["minMs"] != 1 {
		t.Errorf("JSON = %s", b)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != s {
		t.Errorf("round trip = %+v, want %+v", back, s)
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder()
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 25 {
				r.Add("b", time.Duration(i+1)*time.Millisecond)
			}
			r.Fail("z")
		}()
	}
	for range 4 {
		<-done
	}
	r.Add("a", time.Millisecond)
	r.Add("c", time.Millisecond)
	ok, failed := r.Total()
	if ok != 102 || failed != 4 {
		t.Fatalf("Total = %d ok, %d failed; want 102, 4", ok, failed)
	}
	st := r.Stats("c", "missing", "b")
	var names []string
	for _, s := range st {
		names = append(names, s.Op)
	}
	if got := names; len(got) != 4 || got[0] != "c" || got[1] != "b" || got[2] != "a" || got[3] != "z" {
		t.Fatalf("order = %v, want [c b a z]", got)
	}
	if st[1].Latency.Count != 100 || st[1].Errors != 0 || st[3].Errors != 4 || st[3].Latency.Count != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestShare(t *testing.T) {
	for _, c := range []struct{ total, n int }{{2000, 8}, {20, 3}, {1, 4}, {7, 7}, {5, 1}} {
		sum := 0
		for i := range c.n {
			s := share(c.total, c.n, i)
			if s < c.total/c.n || s > c.total/c.n+1 {
				t.Errorf("share(%d, %d, %d) = %d: uneven", c.total, c.n, i, s)
			}
			sum += s
		}
		if sum != c.total {
			t.Errorf("shares of %d over %d add up to %d", c.total, c.n, sum)
		}
	}
}

func TestParseStatus(t *testing.T) {
	status := []byte("Name:\tcrosschat\nVmPeak:\t  900000 kB\nVmHWM:\t   40960 kB\nVmRSS:\t   20480 kB\nThreads:\t9\n")
	m, err := ParseStatus(status)
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 20<<20 || m.Peak != 40<<20 || m.Anon != 0 {
		t.Errorf("ParseStatus = %+v", m)
	}
	m, err = ParseStatus([]byte("VmHWM:\t   40960 kB\nVmRSS:\t   20480 kB\nRssAnon:\t    6144 kB\nRssFile:\t   14336 kB\n"))
	if err != nil || m.Anon != 6<<20 || m.RSS != 20<<20 {
		t.Errorf("ParseStatus with RssAnon = %+v, %v", m, err)
	}
	if _, err := ParseStatus([]byte("Name:\tx\n")); err == nil {
		t.Error("ParseStatus without VmRSS: no error")
	}
	if _, err := ParseStatus([]byte("VmRSS:\tlots\nVmHWM:\t1 kB\n")); err == nil {
		t.Error("ParseStatus with a bad VmRSS: no error")
	}
}
