package relay

import (
	"slices"
	"strings"
)

// redactWrapped hides the forms of secrets that a program split across
// lines: `base64` wraps at 76 columns, `xxd -p` at 60, `fold` wherever
// asked. It looks for each form in s with its line breaks left out, and
// replaces the whole stretch of s the match covers, line breaks included,
// with "[hidden]". It only looks when s has a line break.
func redactWrapped(s string, secrets []string) string {
	if !strings.ContainsAny(s, "\n\r") {
		return s
	}
	spans := wrappedSpans(s, secrets)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.to <= last {
			continue // inside one already hidden
		}
		if sp.from < last {
			sp.from = last
		} else {
			b.WriteString(s[last:sp.from])
			b.WriteString("[hidden]")
		}
		last = sp.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// RedactAcross hides the forms of secrets (SecretForms) that a program
// split across the line break between prev and next, two texts each
// already redacted (RedactSecrets) and stored apart, such as two run-log
// entries of consecutive output lines (`xxd -p api-token` prints 60
// columns a line). It returns prev with the part of such a form it holds
// replaced by "[hidden]" and next without that part, "[hidden]" in its
// place; both unchanged when no form crosses the break.
func RedactAcross(prev, next string, secrets ...string) (string, string) {
	if prev == "" || next == "" {
		return prev, next
	}
	cut := len(prev) + 1 // next starts here in the joined text
	from, to := cut, cut
	for _, sp := range wrappedSpans(prev+"\n"+next, secrets) {
		if sp.from < cut && sp.to > cut {
			from, to = min(from, sp.from), max(to, sp.to)
		}
	}
	if to == cut {
		return prev, next
	}
	return prev[:min(from, len(prev))] + "[hidden]", "[hidden]" + next[to-cut:]
}

// span is a stretch of a text, to exclusive.
type span struct{ from, to int }

// wrappedSpans are the stretches of s, line breaks included, that hold a
// form of a secret once the line breaks are left out, by where they start.
func wrappedSpans(s string, secrets []string) []span {
	// flat is s without line breaks; cuts[k] is how many characters of
	// flat come before the k-th line break, so flat[i] is s[i+n], n the
	// number of cuts at or before i.
	var stripped strings.Builder
	stripped.Grow(len(s))
	var cuts []int
	for rest := s; rest != ""; {
		j := strings.IndexAny(rest, "\n\r")
		if j < 0 {
			stripped.WriteString(rest)
			break
		}
		stripped.WriteString(rest[:j])
		cuts = append(cuts, stripped.Len())
		rest = rest[j+1:]
	}
	flat := stripped.String()
	at := func(i int) int {
		n, _ := slices.BinarySearch(cuts, i+1) // the cuts at or before i
		return i + n
	}
	var spans []span
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		for _, f := range SecretForms(sec) {
			if strings.ContainsAny(f, "\n\r") {
				continue // a form with line breaks of its own was handled whole
			}
			for off := 0; ; {
				i := strings.Index(flat[off:], f)
				if i < 0 {
					break
				}
				i += off
				spans = append(spans, span{at(i), at(i+len(f)-1) + 1})
				off = i + len(f)
			}
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	return spans
}
