// Package termsafe makes text from data (task titles, names, messages,
// paths, logs) safe to print on a terminal: the CLI verbs pass every value
// they print through it, and the window's import dialog the imported
// workers' text. It imports only the standard library.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Line makes a value from data (a task title, an agent or relay name, a
// message, a path) safe to print on one line of a terminal: control
// characters (C0, DEL, C1, so ESC, BEL, CR and newlines too, and the line
// and paragraph separators U+2028 and U+2029), Unicode
// direction overrides and bytes that are not UTF-8 become U+FFFD, so a
// value can neither send escape sequences nor rewrite or hide the lines
// around it. JSON output is never passed through it.
func Line(s string) string { return sanitizeTerm(s, false) }

// Text is Line for text printed over several lines (a result,
// a run log): newlines and tabs are kept, everything else is replaced.
func Text(s string) string { return sanitizeTerm(s, true) }

// termReplacement stands in for each character that is taken out.
const termReplacement = '\uFFFD'

func sanitizeTerm(s string, multiline bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || termUnsafe(r, multiline) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || termUnsafe(r, multiline) {
			b.WriteRune(termReplacement)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// termUnsafe reports whether r must not reach a terminal as it is.
func termUnsafe(r rune, multiline bool) bool {
	switch {
	case multiline && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case !multiline && (r == 0x2028 || r == 0x2029): // line and paragraph separators
		return true
	}
	return false
}

// JSON makes a line of JSON (json.Marshal's output, one value) safe to
// print on a terminal and still the same JSON: json.Marshal escapes C0
// controls but writes C1 controls and direction overrides as they are, so
// each of those becomes a \uXXXX escape, which decodes to the same text.
// Outside its strings JSON is ASCII, so only string contents change.
func JSON(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r >= 0x80 && termUnsafe(r, false) && !(r == utf8.RuneError && n == 1) {
			if out == nil {
				out = append(make([]byte, 0, len(b)+12), b[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

// Writer passes text to a terminal with its ASCII control characters
// (ESC, BEL, a CR that does not end a line, DEL, …) replaced by '?'; newlines
// and tabs pass. It works on bytes, so it needs no whole lines: for
// streams such as `logs --follow`.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer that passes cleaned text on to w.
func NewWriter(w io.Writer) Writer { return Writer{w} }

// Write implements io.Writer; it reports len(p) when all of it was written.
func (t Writer) Write(p []byte) (int, error) {
	var out []byte
	for i, c := range p {
		if c >= 0x20 && c != 0x7f || c == '\n' || c == '\t' || (c == '\r' && i+1 < len(p) && p[i+1] == '\n') {
			continue
		}
		if out == nil {
			out = append([]byte(nil), p...)
		}
		out[i] = '?'
	}
	if out == nil {
		out = p
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
