package termsafe

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTermSafe ensures control characters, direction overrides and broken
// UTF-8 are replaced, newlines and tabs kept only in multi-line text, and
// clean text returned as it is.
func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, line, text string }{
		{"plain title", "plain title", "plain title"},
		{"é ünïcode ✓", "é ünïcode ✓", "é ünïcode ✓"},
		{"a\x1b[31mred", "a\uFFFD[31mred", "a\uFFFD[31mred"},
		{"bell\x07cr\rdel\x7f", "bell\uFFFDcr\uFFFDdel\uFFFD", "bell\uFFFDcr\uFFFDdel\uFFFD"},
		{"two\nlines\tand tab", "two\uFFFDlines\uFFFDand tab", "two\nlines\tand tab"},
		{"c1\u009b2J", "c1\uFFFD2J", "c1\uFFFD2J"},
		{"rtl\u202eevil\u2066", "rtl\uFFFDevil\uFFFD", "rtl\uFFFDevil\uFFFD"},
		{"bad\xffutf8", "bad\uFFFDutf8", "bad\uFFFDutf8"},
		{"one\u2028two\u2029three", "one\uFFFDtwo\uFFFDthree", "one\u2028two\u2029three"},
	} {
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
	var b bytes.Buffer
	if _, err := (Writer{&b}).Write([]byte("ok\r\nesc\x1b[2Jbell\x07\tend\r")); err != nil || b.String() != "ok\r\nesc?[2Jbell?\tend?" {
		t.Fatalf("Writer: %q %v", b.String(), err)
	}
}

// FuzzTermSafe checks that nothing a terminal acts on survives, whatever
// the input.
func FuzzTermSafe(f *testing.F) {
	f.Add("title\x1b]0;x\x07")
	f.Add("\u009b\u202e\xff\r\n\t")
	f.Fuzz(func(t *testing.T, s string) {
		for _, multiline := range []bool{false, true} {
			got := sanitizeTerm(s, multiline)
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, got)
			}
			for _, r := range got {
				if termUnsafe(r, multiline) {
					t.Fatalf("%q left in %q", r, got)
				}
			}
			if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return termUnsafe(r, multiline) }) && got != s {
				t.Fatalf("clean %q changed to %q", s, got)
			}
		}
		var b bytes.Buffer
		_, _ = Writer{&b}.Write([]byte(s))
		for i, c := range b.Bytes() {
			if (c < 0x20 && c != '\n' && c != '\t' && !(c == '\r' && i+1 < b.Len() && b.Bytes()[i+1] == '\n')) || c == 0x7f {
				t.Fatalf("byte %#x left by Writer in %q", c, b.String())
			}
		}
	})
}

// TestJSON ensures a JSON line keeps its meaning while C1 controls and
// direction overrides inside its strings become \u escapes; clean JSON is
// returned as it is.
func TestJSON(t *testing.T) {
	clean := []byte(`{"a":"é ✓ \u001b"}`)
	if got := JSON(clean); !bytes.Equal(got, clean) {
		t.Errorf("JSON(clean) = %s", got)
	}
	in := []byte("{\"t\":\"a\u009b2J\u202eb\u2069\u0085 ok\"}")
	want := `{"t":"a\u009b2J\u202eb\u2069\u0085 ok"}`
	if got := string(JSON(in)); got != want {
		t.Errorf("JSON = %s\nwant %s", got, want)
	}
}
