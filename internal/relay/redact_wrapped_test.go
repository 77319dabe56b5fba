package relay_test

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// wrap splits s into lines of n characters joined by sep, as `base64`
// (76), `xxd -p` (60) and `fold -w N` print.
func wrap(s string, n int, sep string) string {
	var lines []string
	for len(s) > n {
		lines = append(lines, s[:n])
		s = s[n:]
	}
	return strings.Join(append(lines, s), sep)
}

// Ensure a secret is hidden when its encoding is split across lines (the
// way `base64`, `xxd -p` and `fold` print it, with LF or CRLF), the whole
// wrapped stretch hidden and the text around it kept, and multi-line text
// without the secret is kept as it is.
func TestRedactWrappedSecrets(t *testing.T) {
	sec := relay.NewAdminToken()
	b := []byte(sec)
	env := []byte("HOME=/home/ada\nCROSSCHAT_API_TOKEN=" + sec + "\nEDITOR=vi\n")
	for _, tc := range []struct{ name, text string }{
		{"base64 of a file at 76", "$ base64 .env\n" + wrap(base64.StdEncoding.EncodeToString(env), 76, "\n") + "\n$ "},
		{"base64 at 20 with CRLF", wrap(base64.StdEncoding.EncodeToString(b), 20, "\r\n")},
		{"xxd -p", "out:\n" + wrap(hex.EncodeToString(b), 60, "\n") + "\ndone"},
		{"HEX folded", wrap(strings.ToUpper(hex.EncodeToString(b)), 16, "\n")},
		{"plain folded", "token:\n" + wrap(sec, 10, "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := relay.RedactSecrets(tc.text, sec)
			flat := strings.NewReplacer("\n", "", "\r", "").Replace(got)
			for _, f := range relay.SecretForms(sec) {
				if strings.Contains(flat, f) {
					t.Fatalf("form %q left in %q", f, got)
				}
			}
			if !strings.Contains(got, "[hidden]") {
				t.Fatalf("not hidden: %q", got)
			}
			for _, keep := range []string{"$ base64 .env\n", "out:\n", "\ndone", "token:\n"} {
				if strings.Contains(tc.text, keep) && !strings.Contains(got, keep) {
					t.Errorf("%q lost %q: %q", tc.text, keep, got)
				}
			}
		})
	}
	for _, keep := range []string{"line one\nline two\r\n", wrap(base64.StdEncoding.EncodeToString([]byte("hello world, nothing secret here at all")), 8, "\n")} {
		if got := relay.RedactSecrets(keep, sec); got != keep {
			t.Errorf("%q became %q", keep, got)
		}
	}
}

// Ensure RedactAcross hides a secret's form split across two texts stored
// apart (the lines of `xxd -p` and `base64` as separate run-log steps), in
// both, keeping what is around it, and leaves texts without one as they are.
func TestRedactAcross(t *testing.T) {
	sec := relay.NewAdminToken()
	hexed := hex.EncodeToString([]byte(sec + "\n"))
	b64 := base64.StdEncoding.EncodeToString([]byte("A=" + sec + "\n"))
	for _, tc := range []struct{ name, prev, next, wantPrev, wantNext string }{
		{"xxd -p", "out:\n" + hexed[:60], hexed[60:] + "\nend", "out:\n[hidden]", "[hidden]0a\nend"},
		{"base64", b64[:30], b64[30:], "[hidden]", "[hidden]" + b64[len(b64)-4:]},
		{"unrelated", "line one", "line two", "line one", "line two"},
		{"empty prev", "", hexed[60:], "", hexed[60:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev, next := relay.RedactAcross(tc.prev, tc.next, sec)
			if tc.name == "base64" {
				// The edges of the base64 depend on the token: check that
				// no piece longer than the padding survives.
				if !strings.HasSuffix(prev, "[hidden]") || !strings.HasPrefix(next, "[hidden]") || len(next) > len("[hidden]")+4 || len(prev) > len("[hidden]")+4 {
					t.Errorf("got %q, %q", prev, next)
				}
				return
			}
			if prev != tc.wantPrev || next != tc.wantNext {
				t.Errorf("got %q, %q; want %q, %q", prev, next, tc.wantPrev, tc.wantNext)
			}
		})
	}
}
