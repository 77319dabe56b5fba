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
	type span struct{ from, to int } // in s, to exclusive
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
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
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
