package app_test

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// scrape is one parsed GET /metrics.
type scrape map[string]*dto.MetricFamily

// value is the value of the sample of family name whose labels include
// every pair of labels (name, value, name, value…); -1 when there is none.
func (s scrape) value(name string, labels ...string) float64 {
	f, ok := s[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// expected is a value expected of the sample of a family with some labels.
type expected struct {
	want   float64
	family string
	labels []string
}

// sample expects want of family's sample with these labels (name, value…).
func sample(want float64, family string, labels ...string) expected {
	return expected{want, family, labels}
}

// expect checks every expected value, and stops the test on any miss.
func (s scrape) expect(t *testing.T, es ...expected) {
	t.Helper()
	for _, e := range es {
		if got := s.value(e.family, e.labels...); got != e.want {
			t.Errorf("%s%v = %v, want %v", e.family, e.labels, got, e.want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// getMetrics scrapes url with the bearer token (none when empty) and a
// proxy's X-Forwarded-For when proxied; it returns the status and, on 200,
// the parsed families.
func getMetrics(t *testing.T, proxied bool, url, token string) (int, scrape) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	noErr(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if proxied {
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
	}
	resp, err := http.DefaultClient.Do(req)
	noErr(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	noErr(t, err)
	return resp.StatusCode, fams
}

// mustScrape scrapes r's /metrics from loopback without a token.
func mustScrape(t *testing.T, r *app.Relay) scrape {
	t.Helper()
	code, s := getMetrics(t, false, r.Config().BaseURL()+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics from loopback = %d", code)
	}
	return s
}

// nonLoopbackIP is an address of this computer that is not loopback, or
// nil when it has none.
func nonLoopbackIP() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}

// Ensure /metrics serves the Prometheus text format whose values follow
// what happens on the relay (a posted task, tool calls, a waiting claim),
// to loopback or the admin token only.
func TestMetricsFollowTheRelay(t *testing.T) {
	ip := nonLoopbackIP()
	r := startRelay(t, func(c *config.Config) {
		if ip != nil { // listen beyond loopback, so a request can come from elsewhere
			c.Host = "0.0.0.0"
			c.AllowedHosts = append(c.AllowedHosts, ip.String())
		}
	})
	s := mustScrape(t, r)
	if q := s.value("crosschat_tasks", "state", "queued"); q != 0 {
		t.Fatalf("queued before any task = %v", q)
	}
	if n := s.value("crosschat_tool_call_duration_seconds", "tool", "post_task"); n != -1 {
		t.Fatalf("post_task histogram before any call = %v", n)
	}
	for _, st := range []string{"idle", "running"} {
		if v := s.value("crosschat_workers", "state", st); v != 0 {
			t.Fatalf("workers %s = %v", st, v)
		}
	}
	if s.value("process_resident_memory_bytes") <= 0 || s.value("go_goroutines") <= 0 {
		t.Fatal("no process or Go runtime metrics")
	}
	if _, ok := s["crosschat_mesh_link"]; ok {
		t.Fatal("mesh metrics without a mesh")
	}

	alice, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "alice", DisplayName: "Alice", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	bob, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	sa, sb := newSession(t, r, alice.Token), newSession(t, r, bob.Token)

	// A claim waiting for a task shows as one waiting claim until a task comes.
	claimed := make(chan *relay.Task, 1)
	go func() {
		var out struct{ Task *relay.Task }
		sb.call("claim_next_task", map[string]any{"waitMs": 20000}, &out)
		claimed <- out.Task
	}()
	waitFor(t, func() bool { return mustScrape(t, r).value("crosschat_claims_waiting") == 1 }, "one waiting claim")

	var posted relay.Task
	sa.call("post_task", map[string]any{"recipientSlug": "bob", "title": "Count me", "instructions": "Nothing."}, &posted)
	select {
	case task := <-claimed:
		if task == nil || task.ID != posted.ID {
			t.Fatalf("claimed %+v, want %s", task, posted.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting claim did not wake")
	}
	mustScrape(t, r).expect(t,
		sample(1, "crosschat_tasks", "state", "claimed"),
		sample(0, "crosschat_claims_waiting"),
		sample(1, "crosschat_tool_call_duration_seconds", "tool", "post_task"),
		sample(1, "crosschat_tool_call_duration_seconds", "tool", "claim_next_task"),
	)

	// A second task stays queued; a failing call counts as an error.
	sa.call("post_task", map[string]any{"recipientSlug": "bob", "title": "Wait", "instructions": "Nothing."}, nil)
	if res, err := sa.try("get_task", map[string]any{"taskId": "no-such-task"}); err != nil || !res.IsError {
		t.Fatalf("get_task of an unknown task = %+v, %v", res, err)
	}
	mustScrape(t, r).expect(t,
		sample(1, "crosschat_tasks", "state", "queued"),
		sample(2, "crosschat_tool_call_duration_seconds", "tool", "post_task"),
		sample(1, "crosschat_tool_call_errors_total", "tool", "get_task"),
	)

	// Who may scrape.
	token, err := r.Services.System.AdminToken()
	noErr(t, err)
	port := strconv.Itoa(r.Config().Port)
	local := "http://127.0.0.1:" + port + "/metrics"
	for _, tc := range []struct {
		name    string
		proxied bool
		url     string
		token   string
		want    int
	}{
		{"loopback", false, local, "", http.StatusOK},
		{"loopback with the admin token", false, local, token, http.StatusOK},
		{"loopback with a wrong token", false, local, "cca_wrong", http.StatusUnauthorized},
		{"loopback with an agent token", false, local, alice.Token, http.StatusUnauthorized},
		{"through a proxy", true, local, "", http.StatusUnauthorized},
		{"through a proxy with the admin token", true, local, token, http.StatusOK},
	} {
		if code, _ := getMetrics(t, tc.proxied, tc.url, tc.token); code != tc.want {
			t.Errorf("%s: GET /metrics = %d, want %d", tc.name, code, tc.want)
		}
	}
	// A web page that rebinds its own name to 127.0.0.1 is refused by the Host check.
	rebound, err := http.NewRequest(http.MethodGet, local, nil)
	noErr(t, err)
	rebound.Host = "evil.example:" + port
	resp, err := http.DefaultClient.Do(rebound)
	noErr(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("rebound Host: GET /metrics = %d, want 403", resp.StatusCode)
	}
	if ip == nil {
		t.Log("no non-loopback address: the request from another address is not tried")
		return
	}
	remote := "http://" + net.JoinHostPort(ip.String(), port) + "/metrics"
	if code, _ := getMetrics(t, false, remote, ""); code != http.StatusUnauthorized {
		t.Errorf("from %s without a token: GET /metrics = %d, want 401", ip, code)
	}
	if code, s := getMetrics(t, false, remote, token); code != http.StatusOK || s.value("crosschat_tasks", "state", "queued") != 1 {
		t.Errorf("from %s with the admin token: GET /metrics = %d", ip, code)
	}
}
