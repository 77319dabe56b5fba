package cli

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
)

// Every verb and sub-verb answers --help and -h with exit 0: a one-line
// description, its usage, its flags and an example. The verbs are found
// both ways: from the help table, and from the dispatcher (its top-level
// verbs, and each group's actions as its verbAction lists them), so a verb
// or action added without a table entry fails here.
func TestVerbHelp(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	fromTable := map[string]bool{}
	for _, v := range verbTable {
		if fromTable[v.name] {
			t.Errorf("%q is in the table twice", v.name)
		}
		fromTable[v.name] = true
		if v.summary == "" || strings.Contains(v.summary, "\n") || v.example == "" {
			t.Errorf("%q: a summary of one line and an example are required: %+v", v.name, v)
		}
	}
	// The dispatcher's verbs, and each group's actions: a group run with an
	// action nobody has answers with the list its dispatcher knows.
	fromDispatcher := map[string]bool{"serve": true} // main runs serve
	for name := range dispatch() {
		fromDispatcher[name] = true
		err := runCommand([]string{name, "no-such-action"}, "test", &bytes.Buffer{}, &bytes.Buffer{})
		var ae *actionError
		if errors.As(err, &ae) {
			for _, a := range ae.actions {
				fromDispatcher[name+" "+a] = true
			}
		}
	}
	for name := range fromDispatcher {
		if !fromTable[name] {
			t.Errorf("the dispatcher runs %q, which has no help in verbTable", name)
		}
	}
	for name := range fromTable {
		if !fromDispatcher[name] {
			t.Errorf("verbTable has %q, which the dispatcher does not run", name)
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range fromTable {
			if !yield(n) {
				return
			}
		}
	}) {
		v, _ := lookupVerb(name)
		for _, flag := range []string{"--help", "-h"} {
			var out, errb bytes.Buffer
			var code int
			if name == "serve" {
				code = app.Serve([]string{flag}, nil, "test", &out, &out)
			} else {
				code = Command(append(strings.Fields(name), flag), "test", &out, &errb)
			}
			text := out.String()
			if code != 0 || errb.Len() != 0 {
				t.Errorf("%s %s: exit %d, stderr %q", name, flag, code, errb.String())
				continue
			}
			if name == "serve" && !strings.Contains(text, "Runs the relay") {
				t.Errorf("serve %s: %q", flag, text)
			}
			if first, _, _ := strings.Cut(text, "\n"); first != "crosschat-relay "+name+": "+v.summary {
				t.Errorf("%s %s: first line %q", name, flag, first)
			}
			if !strings.Contains(text, "Usage:") || !strings.Contains(text, "Example:\n  "+strings.Split(v.example, "\n")[0]) {
				t.Errorf("%s %s:\n%s", name, flag, text)
			}
		}
	}
}

// A usage error prints the verb's own usage, never the whole help; an
// unknown verb suggests the near ones.
func TestUsageErrorShowsTheVerbOnly(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"tasks", "list", "--frob"}, []string{"unknown flag --frob", "crosschat-relay tasks list [--status S]", "tasks list --help"}, []string{"crosschat-relay agents", ": -frob"}},
		// A flag is spelt as it is typed, and a value that does not read
		// says what would (it said "invalid value "2d" for flag -expires:
		// parse error"); an invite's longest life is checked before the
		// relay is asked (it answered "expiresInHours: must be ...").
		{[]string{"logs", "-z"}, []string{"logs: unknown flag -z\n"}, nil},
		{[]string{"invites", "create", "--expires", "2d"}, []string{`--expires "2d" is not a duration: give hours, minutes or seconds, such as 90m, 24h or 168h`}, []string{"parse error"}},
		{[]string{"invites", "create", "--expires", "1000h"}, []string{"--expires 1000h: an invite is valid for more than 0 and at most 720h"}, []string{"expiresInHours"}},
		{[]string{"invites", "create", "--expires", "0s"}, []string{"--expires 0s: an invite is valid for more than 0"}, []string{"--expires 0h"}},
		{[]string{"invites", "create", "--expires", "-90m"}, []string{"--expires -1h30m: an invite is valid"}, nil},
		{[]string{"tasks", "list", "--limit", "many"}, []string{`--limit "many" is not a whole number`}, []string{"parse error"}},
		// Numbers out of range are refused before anything is read (a
		// negative -n panicked; --limit 0 or 501 was taken silently).
		{[]string{"logs", "-n", "-1"}, []string{"-n -1: give a number of lines, 0 or more"}, []string{"panic"}},
		{[]string{"logs", "-n", "99999999999999999999"}, []string{`-n "99999999999999999999" is out of range`}, []string{"not a whole number"}},
		{[]string{"register", "a", "b"}, []string{`register takes at most one argument ([DIR] [--id ID]), got "b" too`}, []string{"argument(s)"}},
		{[]string{"send", "a", "b", "c"}, []string{`send takes at most 2 arguments (`}, []string{"argument(s)"}},
		{[]string{"tasks", "list", "--limit", "0"}, []string{"--limit 0: give 1 to 500"}, nil},
		{[]string{"tasks", "list", "--limit", "501"}, []string{"--limit 501: give 1 to 500"}, nil},
		{[]string{"status", "now"}, []string{`status takes no arguments, got "now"`, "crosschat-relay status\n"}, []string{"crosschat-relay agents"}},
		{[]string{"agent", "list"}, []string{`unknown command "agent"`, "Did you mean agents?", "crosschat-relay --help"}, []string{"crosschat-relay tasks"}},
		{[]string{"mesh"}, []string{"mesh needs status", "crosschat-relay mesh trust NAME|ID"}, []string{"crosschat-relay agents"}},
		// The flags its help calls required are asked for by name, before
		// the relay is asked (it said "displayName: is required.").
		{[]string{"agents", "add", "builder", "--model", "m"}, []string{"agents add needs --name and --capability", "crosschat-relay agents add SLUG --name N"}, []string{"displayName"}},
		// A group of one action names it (it used to say "tasks needs , not").
		{[]string{"invites", "show", "x"}, []string{`invites needs create, not "show"`, "crosschat-relay invites create [--uses N]"}, []string{"needs ,"}},
		{[]string{"tasks", "get", "x"}, []string{`tasks needs list or show, not "get"`, "crosschat-relay tasks list [--status S]", "crosschat-relay tasks show ID"}, nil},
		{[]string{"invites"}, []string{"invites needs create\n"}, []string{"needs \n"}},
		// A --tool the sessions verbs cannot read is a usage error, said
		// before any session is read (it exited 1 with the session
		// package's "sessions: unknown tool").
		{[]string{"sessions", "list", "--tool", "gemini"}, []string{`sessions list: --tool "gemini": give claude-code or codex`, "Usage:\n  crosschat-relay sessions list\n", "sessions list --help"}, []string{"unknown tool"}},
		{[]string{"sessions", "show", "x", "--tool", "Codex"}, []string{`sessions show: --tool "Codex": give claude-code or codex`, "sessions show --help"}, nil},
	} {
		var out, errb bytes.Buffer
		code := Command(tc.args, "test", &out, &errb)
		if code != 2 {
			t.Errorf("%v: exit %d", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errb.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(errb.String(), n) {
				t.Errorf("%v: stderr has %q:\n%s", tc.args, n, errb.String())
			}
		}
	}
}

// Each flag line of a verb's help is the flag as it is typed (one dash for
// a one-letter flag, as the usage lines show -f and -n N) and one word
// naming its value. A text in backquotes is Go's way of naming the value,
// so a command quoted in a flag's text used to become its value
// ("--harness CROSSCHAT-RELAY HARNESSES").
func TestVerbHelpFlagLines(t *testing.T) {
	goDuration := regexp.MustCompile(`\(default -?[0-9.hm]*[hm]0s\)`)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	flagLine := regexp.MustCompile(`^  (--[a-z][a-z0-9-]+|-[a-z])( [A-Z][A-Z0-9_]*)?$`)
	for _, v := range verbTable {
		var out, errb bytes.Buffer
		if v.name == "serve" {
			if code := app.Serve([]string{"--help"}, nil, "test", &out, &errb); code != 0 {
				t.Errorf("serve --help: exit %d, %q", code, errb.String())
			}
			if strings.Contains(out.String(), "--hidden") {
				t.Errorf("serve --help names the window's --hidden:\n%s", out.String())
			}
		} else if code := Command(append(strings.Fields(v.name), "--help"), "test", &out, &errb); code != 0 {
			t.Errorf("%s --help: exit %d, %q", v.name, code, errb.String())
			continue
		}
		// A duration's default is as it is typed: 24h, not Go's 24h0m0s.
		if m := goDuration.FindString(out.String()); m != "" {
			t.Errorf("%s --help: a default spelt %q", v.name, m)
		}
		inFlags := false
		for _, line := range strings.Split(out.String(), "\n") {
			switch {
			case line == "Flags:" || line == "The relay (every verb):":
				inFlags = true
			case line == "" || !strings.HasPrefix(line, " "):
				inFlags = false
			case inFlags && !strings.HasPrefix(line, "      ") && !flagLine.MatchString(line):
				t.Errorf("%s --help: flag line %q", v.name, line)
			}
		}
	}
}

// A duration flag's help names its default as it is typed, in every verb
// that has one: it said (default 24h0m0s), (default 30m0s).
func TestDurationDefaultsAsTyped(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		verb, want string
	}{
		{"invites create", "  --expires DURATION\n      how long it is valid: 1h, 24h, 168h (at most 720h) (default 24h)\n"},
		{"workers set", "  --timeout DURATION\n      time limit per task (default 30m)\n"},
		{"bench", "  --timeout DURATION\n      give up after this long (default 45m)\n"},
	} {
		var out, errb bytes.Buffer
		if code := Command(append(strings.Fields(tc.verb), "--help"), "test", &out, &errb); code != 0 {
			t.Fatalf("%s --help: exit %d, %q", tc.verb, code, errb.String())
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s --help lacks %q:\n%s", tc.verb, tc.want, out.String())
		}
	}
}

// durationText spells a duration as a person types it, and what it spells
// reads back the same.
func TestDurationText(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{24 * time.Hour, "24h"},
		{30 * time.Minute, "30m"},
		{90 * time.Minute, "1h30m"},
		{-90 * time.Minute, "-1h30m"},
		{time.Hour + 5*time.Second, "1h0m5s"},
		{90 * time.Second, "1m30s"},
		{45 * time.Second, "45s"},
		{1500 * time.Millisecond, "1.5s"},
		{0, "0s"},
	} {
		got := durationText(tc.d)
		if got != tc.want {
			t.Errorf("durationText(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != tc.d {
			t.Errorf("%q reads back as %v, %v; want %v", got, back, err, tc.d)
		}
	}
}

// What some helps say and leave out: tasks show says the end of an id
// tells tasks apart; bench hides the flags it gives its own child
// processes; sessions, which asks no relay, lists and takes none of the
// relay's flags; help serve answers (it was an unknown command).
func TestHelpSaysAndLeavesOut(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		args      []string
		code      int
		want, not []string
	}{
		{[]string{"tasks", "show", "--help"}, 0, []string{"time-ordered (UUIDv7)", "give the END of an id"}, nil},
		{[]string{"bench", "--help"}, 0, []string{"  --mesh\n", "  --cpuprofile"}, []string{"--relay-child", "--floor-child", "--mesh-embed", "--mesh-join", "internal:"}},
		{[]string{"sessions", "list", "--help"}, 0, []string{"  --tool", "  --json"}, []string{"--port", "--data-dir", "--host", "The relay"}},
		{[]string{"sessions", "--help"}, 0, []string{"no relay needed"}, nil},
		{[]string{"sessions", "show", "x", "--port", "4391"}, 2, []string{"unknown flag --port"}, nil},
		{[]string{"help", "serve"}, 0, []string{"crosschat-relay serve", "--allowed-hosts"}, []string{"unknown command"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Command(tc.args, "test", &out, &errb)
			text := out.String() + errb.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(text, n) {
					t.Errorf("has %q:\n%s", n, text)
				}
			}
		})
	}
}
