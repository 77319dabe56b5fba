package relay

import (
	"regexp"
	"strings"
	"testing"
)

// The slug and task id rules as written in the docs; isSlug and isUUID
// must agree with them on every string.
var (
	slugRule = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{1,79}$`)
	uuidRule = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// ruleSamples are edge cases of both rules.
var ruleSamples = []string{
	"", "a", "ab", "a1", "1a", "a-", "-a", ".a", "_a", ":a", "a.b", "a_b:c-d", "bob", "Bob", "a b",
	"ab ", " ab", "ab\n", "é1", "aé", "a/b", "a+b", strings.Repeat("a", 79), strings.Repeat("a", 80),
	strings.Repeat("a", 81), "0123456789", "a\x00",
	"6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f", "6F1C2D3E-4A5B-4C6D-8E9F-0A1B2C3D4E5F",
	"6f1c2d3e4a5b-4c6d-8e9f-0a1b2c3d4e5f-", "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5", "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5fa",
	"6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5g", "6f1c2d3e_4a5b-4c6d-8e9f-0a1b2c3d4e5f", "------------------------------------",
}

func TestSlugAndUUIDRules(t *testing.T) {
	matched := 0
	for _, s := range ruleSamples {
		checkRules(t, s)
		if slugRule.MatchString(s) || uuidRule.MatchString(s) {
			matched++
		}
	}
	if matched < 8 {
		t.Fatalf("only %d samples match a rule; the table no longer tests both sides", matched)
	}
}

func FuzzSlugAndUUIDRules(f *testing.F) {
	for _, s := range ruleSamples {
		f.Add(s)
	}
	f.Fuzz(checkRules)
}

func checkRules(t *testing.T, s string) {
	if got, want := isSlug(s), slugRule.MatchString(s); got != want {
		t.Errorf("isSlug(%q) = %v, the rule says %v", s, got, want)
	}
	if got, want := isUUID(s), uuidRule.MatchString(s); got != want {
		t.Errorf("isUUID(%q) = %v, the rule says %v", s, got, want)
	}
}
