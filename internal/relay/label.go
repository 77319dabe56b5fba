package relay

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// RelayNameForm is a relay's name in the one form relay names are compared
// in, and the label its agents' qualified names (slug@label) take from it.
type RelayNameForm struct {
	// Key is the form names are compared in: two relays whose keys are
	// equal are named alike. "" for a name that is not safe to compare
	// (invisible characters, mixed scripts): such a name is like no other.
	Key string
	// Label is Key when it is also a slug (a–z, 0–9, '.', '_', '-', at
	// most MaxRelayLabel bytes) and not shaped like a relay id: what
	// follows @ in qualified names. "" otherwise: the relay's agents are
	// named with its id.
	Label string
	// Issue says why there is no label ("" when there is one).
	Issue string
}

// MaxRelayLabel bounds a relay label, so slug@label stays a short name.
const MaxRelayLabel = 40

// RelayName returns the compared form and the label of a relay name.
// folded must be the name in Unicode NFKC with its case folded
// (NFKC_Casefold): this package has no normalisation tables, so the mesh
// folds names before it calls this. Runs of white space become '-', and
// '-', '_' and '.' at either end are dropped; what is left must have no
// invisible character (format and control characters, default-ignorable
// fillers and variation selectors), only letters, digits, combining marks
// and '-', '_', '.', and letters of one script (Latin may go with Han and
// Japanese or Korean scripts, as people write them).
func RelayName(folded string) RelayNameForm {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(folded) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte('-')
			space = false
		}
		b.WriteRune(r)
	}
	key := strings.Trim(b.String(), "-_.")
	if issue := nameIssue(key); issue != "" {
		return RelayNameForm{Issue: issue}
	}
	if len(key) < 2 || len(key) > MaxRelayLabel || !isSlug(key) || strings.ContainsRune(key, ':') {
		return RelayNameForm{Key: key, Issue: fmt.Sprintf("is not 2–%d characters of a–z, 0–9, '-', '_' and '.'", MaxRelayLabel)}
	}
	if relayIDShaped(key) {
		// slug@<relay id> names the agents of the relay with that id: a
		// label of that shape could take another relay's names.
		return RelayNameForm{Key: key, Issue: "has the shape of a relay id (16 hexadecimal digits)"}
	}
	return RelayNameForm{Key: key, Label: key}
}

// relayIDShaped reports whether s has the shape of a relay id: 16
// lowercase hexadecimal digits.
func relayIDShaped(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// nameIssue says what makes a folded name unsafe to compare: an invisible
// or unassigned character, a character that is neither a letter, a digit,
// a mark nor a separator, or letters of more than one script.
func nameIssue(s string) string {
	if s == "" {
		return "is empty"
	}
	scripts := map[string]bool{}
	prev := rune(0)
	for _, r := range s {
		switch {
		case invisible(r):
			return fmt.Sprintf("has an invisible character (U+%04X)", r)
		case r == '-' || r == '_' || r == '.':
		case unicode.IsMark(r):
			if !unicode.IsLetter(prev) && !unicode.IsMark(prev) {
				return fmt.Sprintf("has a mark on no letter (U+%04X)", r)
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if r < 0x80 && unicode.IsDigit(r) {
				break // ASCII digits go with any script
			}
			sc := scriptOf(r)
			if sc == "" {
				return fmt.Sprintf("has a letter of no script (U+%04X)", r)
			}
			scripts[sc] = true
		default:
			return fmt.Sprintf("has a character that is not a letter, a digit, '-', '_' or '.' (U+%04X)", r)
		}
		prev = r
	}
	if !oneScript(scripts) {
		names := make([]string, 0, len(scripts))
		for sc := range scripts {
			names = append(names, sc)
		}
		slices.Sort(names)
		return "mixes scripts (" + strings.Join(names, ", ") + ")"
	}
	return ""
}

// invisible reports whether r shows nothing (or nothing reliable): control,
// format, private-use, surrogate and unassigned code points, and the
// default-ignorable letters and marks (fillers, variation selectors) that
// are not format characters.
func invisible(r rune) bool {
	if !unicode.IsGraphic(r) || unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	switch {
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x3164, r == 0xFFA0:
		return true // combining grapheme joiner, Hangul fillers, Khmer inherent vowels
	case 0x180B <= r && r <= 0x180F, 0xFE00 <= r && r <= 0xFE0F, 0xE0100 <= r && r <= 0xE01EF:
		return true // variation selectors
	}
	return false
}

// scriptOf names the script of letter or digit r ("" for Common or
// Inherited, which name no script).
func scriptOf(r rune) string {
	for name, table := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// oneScript reports whether the scripts of a name are one, or a mix people
// write together (Unicode's "highly restrictive" profile): Latin with Han
// and Hiragana and Katakana, with Han and Bopomofo, or with Han and Hangul.
func oneScript(scripts map[string]bool) bool {
	if len(scripts) <= 1 {
		return true
	}
	for _, allowed := range [][]string{
		{"Latin", "Han", "Hiragana", "Katakana"},
		{"Latin", "Han", "Bopomofo"},
		{"Latin", "Han", "Hangul"},
	} {
		ok := true
		for sc := range scripts {
			if !slices.Contains(allowed, sc) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
