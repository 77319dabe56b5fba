package cli_test

import (
	"strconv"
	"strings"
	"testing"
)

// status and the admin verbs given the --port of a relay of another data
// folder: status said "not running" as if nothing answered there, and the
// admin verbs only that the default folder holds no admin token. Both now
// say that a relay answers at that address and that --data-dir names it.
func TestPortOfAnotherDataFolder(t *testing.T) {
	r := startRelay(t)
	port := strconv.Itoa(r.Config().Port)
	other := t.TempDir()
	addr := "http://127.0.0.1:" + port
	for _, c := range []struct {
		name      string
		args      []string
		code      int
		want, not string
	}{
		{"status at the relay's port", []string{"status", "--port", port, "--data-dir", other}, 3,
			"is not running on this data folder.\n  Data     " + other + "\n  Note     a relay of another data folder answers at " + addr + ": name its folder with --data-dir", ""},
		{"status with no address", []string{"status", "--data-dir", other}, 3, "is not running", "answers at"},
		{"status of the relay's folder", []string{"status", "--port", port, "--data-dir", r.Config().DataDir}, 0, "is running", "Note"},
		{"an admin verb at the relay's port", []string{"tasks", "list", "--port", port, "--data-dir", other}, 1,
			"no admin token in " + other + "/api-token: to talk to the relay at 127.0.0.1:" + port + ", pass its data folder with --data-dir (or set CROSSCHAT_API_TOKEN)", ""},
		{"an admin verb with no address", []string{"tasks", "list", "--data-dir", other}, 1, "no admin token", "pass its data folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CROSSCHAT_API_TOKEN", "")
			out, errs, code := run(t, c.args...)
			if got := out + errs; code != c.code || !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
				t.Fatalf("exit %d, %q; want %d containing %q", code, got, c.code, c.want)
			}
		})
	}
}
