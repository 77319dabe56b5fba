package mesh

import "testing"

// Ensure a relay name that looks like "relay-a" to a person either compares
// as relay-a (so it is the same name: shown beside the trusted relay, and
// never its label) or takes no label at all (its agents are named by its
// relay id) — never a label of its own that reads like relay-a.
func TestLookAlikesTakeNoOtherLabel(t *testing.T) {
	for _, name := range []string{
		"relay-a\u0301",     // a combining acute: relay-á
		"relay-a\u20dd",     // an enclosing circle
		"relay-\u0251",      // Latin alpha
		"relay\u2010a",      // a Unicode hyphen
		"relay\u2011a",      // a non-breaking hyphen
		"relay\u2212a",      // a minus sign
		"relay\u30fca",      // the Katakana long vowel mark, a dash to the eye
		"relay\u2e3aa",      // a two-em dash
		"relay-a\u2800",     // a blank Braille pattern
		"relay-a\U000e0061", // a tag letter
		"relay-a\u180e",     // the Mongolian vowel separator
		"relay-a\u115f",     // a Hangul filler
		"relay-a\u0345",     // a Greek iota subscript, which folds to iota
		"relay-\u0661",      // an Arabic-Indic one
		"re\u217cay-a",      // the Roman numeral fifty
		"\U0001d42b\U0001d41e\U0001d425\U0001d41a\U0001d432-a", // bold mathematical letters
		"relay\uff0da",                          // a fullwidth hyphen
		"relay-a\u200f",                         // a right-to-left mark
		"\u202erelay-a",                         // a right-to-left override
		"relay-a\ufe0f",                         // a variation selector
		"\u0440\u0435\u04cf\u0430\u0443-\u0430", // Cyrillic throughout
	} {
		got := relayName(name)
		if got.Label != "" && got.Key != "relay-a" {
			t.Errorf("%q (%+q) takes the label %q (key %q)", name, name, got.Label, got.Key)
		}
	}
}
