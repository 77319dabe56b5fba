package mesh

import (
	"testing"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure names that look alike to a person compare alike, or are refused:
// width, case and compatibility forms fold to one key; invisible characters
// and mixed scripts leave a name with no key.
func TestRelayNameFolds(t *testing.T) {
	for _, tc := range []struct{ name, key string }{
		{"relay-a", "relay-a"},
		{"RELAY-A", "relay-a"},
		{"\uff52\uff45\uff4c\uff41\uff59\uff0d\uff41", "relay-a"}, // fullwidth
		{"relay\u00a0a", "relay-a"},                               // no-break space
		{"\u0280elay-a", ""},                                      // small capital R: a letter of IPA, still Latin
		{"\ufb01le-box", "file-box"},                              // the fi ligature
		{"Stra\u00dfe", "strasse"},                                // ß folds to ss
		{"relay-\u2160", "relay-i"},                               // Roman numeral one
		{"relay-a\u200b", ""},
		{"rel\u0430y-a", ""}, // Cyrillic a
		{"BÜRO", "büro"},
		{"bu\u0308ro", "büro"}, // decomposed ü
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := relayName(tc.name)
			if tc.name == "\u0280elay-a" {
				if got.Key == "relay-a" {
					t.Fatalf("%q folds to relay-a", tc.name)
				}
				return
			}
			if got.Key != tc.key {
				t.Fatalf("relayName(%q) = %+v; want key %q", tc.name, got, tc.key)
			}
		})
	}
}

// FuzzRelayName feeds arbitrary names (they come from other computers) to
// the fold and the rule: never a panic, a key folds to itself, and a label
// always makes a qualified name.
func FuzzRelayName(f *testing.F) {
	for _, s := range []string{"relay-a", "RELAY A", "relay-a\u200b", "rel\u0430y", "ｒｅｌａｙ", "Stra\u00dfe", "\u0301", "a\u3164b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !utf8.ValidString(name) {
			return
		}
		got := relayName(name)
		if got.Key != "" {
			if again := relayName(got.Key); again.Key != got.Key {
				t.Fatalf("key %q of %q folds to %q", got.Key, name, again.Key)
			}
		}
		if got.Label != "" && (got.Label != got.Key || !relay.IsQualified("operator@"+got.Label)) {
			t.Fatalf("label %q of %q (key %q)", got.Label, name, got.Key)
		}
	})
}
