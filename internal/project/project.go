// Package project makes a project folder an address on the relay: the rules
// that turn a folder (or an id someone gives) into a project id, and the
// per-user store that keeps each registered project's folder and agent
// token in the user's own config folder, never inside the project.
//
// It imports only the standard library.
package project

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// EnvID names a project id in the environment; --id takes precedence.
const EnvID = "CROSSCHAT_PROJECT_ID"

// MaxIDLen is the longest id (and the longest id given by hand, before it
// is normalised), in characters: the relay's agent names stop at 80.
const MaxIDLen = 80

// MinIDLen is the shortest id: the relay's agent names have at least 2
// characters.
const MinIDLen = 2

// Source says where an id came from.
type Source string

// The sources of an id, in the order they are tried.
const (
	FromFlag   Source = "--id"
	FromEnv    Source = EnvID
	FromFolder Source = "the folder's name"
)

// Normalize applies the id rules to s: lowercase, every run of characters
// other than a-z and 0-9 becomes one "-", and leading and trailing "-" are
// removed. "My Project!" becomes "my-project", "other_repo" "other-repo".
// The result may be empty or too long; Check says so.
func Normalize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// CheckGiven refuses an id given by hand (a flag, the environment, a
// command's argument) that is not a plain name: one with a path separator,
// "..", a control character or more than MaxIDLen characters. It runs
// before the id is normalised, so "../api" is refused rather than quietly
// becoming "api".
func CheckGiven(raw string) error {
	switch {
	case !utf8.ValidString(raw):
		return errors.New("it is not valid UTF-8")
	case utf8.RuneCountInString(raw) > MaxIDLen:
		return fmt.Errorf("it is %d characters; an id has at most %d", utf8.RuneCountInString(raw), MaxIDLen)
	case strings.ContainsAny(raw, `/\`):
		return errors.New("it contains a path separator; an id is a name, not a path")
	case strings.Contains(raw, ".."):
		return errors.New(`it contains ".."; an id is a name, not a path`)
	case strings.IndexFunc(raw, unicode.IsControl) >= 0:
		return errors.New("it contains a control character")
	}
	return nil
}

// Check refuses a normalised id the relay cannot use as an agent name:
// empty, one character, or longer than MaxIDLen. raw is what it was made
// from, named in the message.
func Check(id, raw string) error {
	switch n := len(id); {
	case n == 0:
		return fmt.Errorf("%q has no letter or digit (a-z, 0-9), so it normalises to nothing", raw)
	case n < MinIDLen:
		return fmt.Errorf("%q normalises to %q; an id needs at least %d letters or digits", raw, id, MinIDLen)
	case n > MaxIDLen:
		return fmt.Errorf("%q normalises to %d characters; an id has at most %d", raw, n, MaxIDLen)
	}
	return nil
}

// IDError is an id that was refused, with where it came from.
type IDError struct {
	Source Source
	Raw    string
	Err    error
}

func (e *IDError) Error() string {
	hint := ""
	if e.Source == FromFolder {
		hint = "; name the project with --id (or " + EnvID + ")"
	}
	return fmt.Sprintf("project id from %s refused: %v%s", e.Source, e.Err, hint)
}

func (e *IDError) Unwrap() error { return e.Err }

// ResolveID returns the project id of dir: flagID when it is not empty,
// else envID when it is not empty, else dir's own name; normalised and
// checked, with where it came from. A given id of only spaces is refused,
// never taken as "not given".
func ResolveID(flagID, envID, dir string) (string, Source, error) {
	id, src, err := ExplicitID(flagID, envID)
	if err != nil || id != "" {
		return id, src, err
	}
	raw := filepath.Base(filepath.Clean(dir))
	id = Normalize(raw)
	if err := Check(id, raw); err != nil {
		return "", FromFolder, &IDError{Source: FromFolder, Raw: raw, Err: err}
	}
	return id, FromFolder, nil
}

// ExplicitID returns the id given by hand, flagID when it is not empty,
// else envID, normalised and checked; "" when neither is given. An id of
// only spaces is refused.
func ExplicitID(flagID, envID string) (string, Source, error) {
	raw, src := flagID, FromFlag
	if raw == "" {
		raw, src = envID, FromEnv
	}
	if raw == "" {
		return "", FromFolder, nil
	}
	if strings.TrimSpace(raw) == "" {
		return "", src, &IDError{Source: src, Raw: raw, Err: errors.New("it is blank (only spaces); give an id, or leave it out to use the folder's name")}
	}
	if err := CheckGiven(raw); err != nil {
		return "", src, &IDError{Source: src, Raw: raw, Err: err}
	}
	id := Normalize(raw)
	if err := Check(id, raw); err != nil {
		return "", src, &IDError{Source: src, Raw: raw, Err: err}
	}
	return id, src, nil
}
