package app_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure the worker limits the dashboard reads over the bridge are the ones
// WorkerConfig.Validate enforces: each maximum is accepted, one more is
// refused, zero becomes the default, and the name pattern agrees with it.
func TestWorkerLimitsMatchValidation(t *testing.T) {
	r := startRelay(t)
	token, err := r.Config().AdminToken(false)
	noErr(t, err)
	var l app.WorkerLimits
	if err := client.New(r.Config().BaseURL(), token).Call(context.Background(), "Workers", "Limits", &l); err != nil {
		t.Fatal(err)
	}
	if l != r.Services.Workers.Limits() {
		t.Fatalf("bridge %+v, direct %+v", l, r.Services.Workers.Limits())
	}
	base := relay.WorkerConfig{AgentSlug: "bob", Harness: relay.HarnessCustom, Command: "/bin/agent", Workdir: "/w", AllowedSenders: []string{"operator"}, Enabled: true}
	names := func(n int, f func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	cases := []struct {
		field string
		max   int
		set   func(c *relay.WorkerConfig, n int)
	}{
		{"timeoutMinutes", l.MaxTimeoutMinutes, func(c *relay.WorkerConfig, n int) { c.TimeoutMinutes = n }},
		{"runsPerHour", l.MaxRunsPerHour, func(c *relay.WorkerConfig, n int) { c.RunsPerHour = n }},
		{"args", l.MaxArgs, func(c *relay.WorkerConfig, n int) { c.Args = names(n, func(int) string { return "-v" }) }},
		{"extraDirs", l.MaxExtraDirs, func(c *relay.WorkerConfig, n int) {
			c.ExtraDirs = names(n, func(i int) string { return fmt.Sprintf("/x/%d", i) })
		}},
		{"allowedSenders", l.MaxSenders, func(c *relay.WorkerConfig, n int) {
			c.AllowedSenders = names(n, func(i int) string { return fmt.Sprintf("s%d", i) })
		}},
		{"env", l.MaxEnv, func(c *relay.WorkerConfig, n int) {
			c.Env = names(n, func(i int) string { return fmt.Sprintf("V%d", i) })
		}},
		{"allowPaths", l.MaxAllowPaths, func(c *relay.WorkerConfig, n int) {
			c.AllowPaths = names(n, func(i int) string { return fmt.Sprintf("/x/%d:rw", i) })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			if tc.max < 1 {
				t.Fatalf("limit %d", tc.max)
			}
			c := base
			tc.set(&c, tc.max)
			if _, err := c.Validate(); err != nil {
				t.Fatalf("at the limit %d: %v", tc.max, err)
			}
			c = base
			tc.set(&c, tc.max+1)
			if _, err := c.Validate(); relay.ErrorCode(err) != relay.EInvalidRequest || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("over the limit %d: %v", tc.max+1, err)
			}
		})
	}
	got, err := base.Validate()
	noErr(t, err)
	if got.TimeoutMinutes != l.DefaultTimeoutMinutes || got.RunsPerHour != l.DefaultRunsPerHour {
		t.Fatalf("defaults %d min, %d/h; limits say %d, %d", got.TimeoutMinutes, got.RunsPerHour, l.DefaultTimeoutMinutes, l.DefaultRunsPerHour)
	}
	re := regexp.MustCompile(l.EnvNamePattern)
	for _, name := range []string{"OPENAI_API_KEY", "_x", "a1", "1A", "MY-VAR", "", "A B", "É"} {
		c := base
		c.Env = []string{name}
		_, err := c.Validate()
		if re.MatchString(name) != (err == nil) {
			t.Errorf("%q: pattern match %v, Validate %v", name, re.MatchString(name), err)
		}
	}
}
