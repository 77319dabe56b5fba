package harness

// withoutComments returns b with its comments outside strings, // to the
// end of the line and /* to */, turned into spaces (line breaks kept), as
// Gemini CLI reads its settings files (strip-json-comments before
// JSON.parse). An unclosed /* comment runs to the end.
func withoutComments(b []byte) []byte {
	out := append([]byte(nil), b...)
	blank := func(i int) {
		if out[i] != '\n' && out[i] != '\r' {
			out[i] = ' '
		}
	}
	inString := false
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case inString && c == '\\':
			i++ // the escaped byte, a quote included
		case c == '"':
			inString = !inString
		case inString || c != '/' || i+1 == len(out):
		case out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				blank(i)
			}
		case out[i+1] == '*':
			blank(i)
			blank(i + 1)
			for i += 2; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					blank(i)
					blank(i + 1)
					i++
					break
				}
				blank(i)
			}
		}
	}
	return out
}
