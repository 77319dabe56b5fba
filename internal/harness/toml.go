package harness

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The hand-written TOML editing of Codex's config.toml: just enough TOML to
// replace one table and keep every other line as it was.

var (
	tomlHeader = regexp.MustCompile(`^\s*(\[\[?)\s*(.*?)\s*(\]\]?)\s*(#.*)?$`)
	tomlBare   = regexp.MustCompile(`^[A-Za-z0-9_-]+`)
)

// ReplaceTOMLTable removes the table named table (a dotted key such as
// mcp_servers.crosschat) and its subtables from text, keeping everything
// else, and appends newTable. It fails, leaving the decision to the caller,
// when text is not TOML it can read or defines the table some other way
// (dotted keys or an inline table).
func ReplaceTOMLTable(text, table, newTable string) (string, error) {
	want := splitKey(table)
	lines := strings.SplitAfter(text, "\n")
	var kept []string
	skipping := false
	current := []string{}
	st := tomlState{}
	for n, line := range lines {
		if line == "" {
			continue
		}
		if st.inString != "" || st.depth > 0 {
			if err := st.scan(line); err != nil {
				return "", fmt.Errorf("line %d: %w", n+1, err)
			}
			if !skipping {
				kept = append(kept, line)
			}
			continue
		}
		trim := strings.TrimSpace(line)
		switch {
		case trim == "" || strings.HasPrefix(trim, "#"):
		case strings.HasPrefix(trim, "["):
			m := tomlHeader.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
			if m == nil || len(m[1]) != len(m[3]) {
				return "", fmt.Errorf("line %d: unreadable table header: %w", n+1, errUnsafe)
			}
			key, rest, err := parseKey(m[2])
			if err != nil || rest != "" {
				return "", fmt.Errorf("line %d: unreadable table name: %w", n+1, errUnsafe)
			}
			current = key
			skipping = hasPrefix(key, want)
		default:
			key, rest, err := parseKey(trim)
			if err != nil || !strings.HasPrefix(rest, "=") {
				return "", fmt.Errorf("line %d: not a key = value line: %w", n+1, errUnsafe)
			}
			if full := append(append([]string{}, current...), key...); !skipping && (hasPrefix(full, want) || hasPrefix(want, full)) {
				return "", fmt.Errorf("line %d: %s is defined outside its own table: %w", n+1, table, errUnsafe)
			}
			if err := st.scan(rest[1:]); err != nil {
				return "", fmt.Errorf("line %d: %w", n+1, err)
			}
		}
		if !skipping {
			kept = append(kept, line)
		}
	}
	if st.inString != "" || st.depth > 0 {
		return "", fmt.Errorf("unterminated value at the end: %w", errUnsafe)
	}
	out := strings.TrimRight(strings.Join(kept, ""), " \t\r\n")
	if out != "" {
		out += "\n\n"
	}
	return out + strings.TrimRight(newTable, "\n") + "\n", nil
}

func hasPrefix(key, prefix []string) bool {
	if len(key) < len(prefix) {
		return false
	}
	for i := range prefix {
		if key[i] != prefix[i] {
			return false
		}
	}
	return true
}

func splitKey(s string) []string {
	k, _, _ := parseKey(s)
	return k
}

// parseKey reads a dotted TOML key (bare or quoted parts) at the start of
// s and returns its parts and the rest of s, trimmed.
func parseKey(s string) ([]string, string, error) {
	var parts []string
	s = strings.TrimSpace(s)
	for {
		switch {
		case strings.HasPrefix(s, `"`):
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, "", errUnsafe
			}
			var v string
			if err := json.Unmarshal([]byte(s[:end+1]), &v); err != nil {
				return nil, "", errUnsafe
			}
			parts, s = append(parts, v), s[end+1:]
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", errUnsafe
			}
			parts, s = append(parts, s[1:end+1]), s[end+2:]
		default:
			b := tomlBare.FindString(s)
			if b == "" {
				return nil, "", errUnsafe
			}
			parts, s = append(parts, b), s[len(b):]
		}
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, ".") {
			return parts, s, nil
		}
		s = strings.TrimSpace(s[1:])
	}
}

// tomlState follows strings and brackets across the lines of a value.
type tomlState struct {
	inString string // `"""` or `'''` while in a multi-line string
	depth    int
}

func (st *tomlState) scan(s string) error {
	for i := 0; i < len(s); i++ {
		if st.inString != "" {
			if strings.HasPrefix(s[i:], st.inString) {
				i += 2
				st.inString = ""
			} else if st.inString == `"""` && s[i] == '\\' {
				i++
			}
			continue
		}
		switch c := s[i]; c {
		case '#':
			return nil
		case '[', '{':
			st.depth++
		case ']', '}':
			st.depth--
			if st.depth < 0 {
				return fmt.Errorf("unbalanced brackets: %w", errUnsafe)
			}
		case '"', '\'':
			q := string([]byte{c, c, c})
			if strings.HasPrefix(s[i:], q) {
				st.inString = q
				i += 2
				continue
			}
			j := i + 1
			for j < len(s) && s[j] != c && s[j] != '\n' {
				if c == '"' && s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) || s[j] != c {
				return fmt.Errorf("unterminated string: %w", errUnsafe)
			}
			i = j
		}
	}
	return nil
}
