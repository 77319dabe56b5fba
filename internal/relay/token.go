package relay

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Token prefixes.
const (
	AgentTokenPrefix = "cca_"
	RunTokenPrefix   = "ccr_"
	InviteCodePrefix = "cci_"
)

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms; if it does, no
		// secret can be made safely.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewAgentToken returns a fresh agent token (cca_ + 43 characters).
func NewAgentToken() string { return AgentTokenPrefix + randomString(32) }

// NewRunToken returns a fresh run token (ccr_ + 43 characters).
func NewRunToken() string { return RunTokenPrefix + randomString(32) }

// NewInviteCode returns a fresh invite code (cci_ + 32 characters).
func NewInviteCode() string { return InviteCodePrefix + randomString(24) }

// NewAdminToken returns a fresh admin token (43 characters, no prefix).
func NewAdminToken() string { return randomString(32) }

// HashToken returns the SHA-256 hex digest under which a token is stored.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TokensEqual compares two secrets in constant time.
func TokensEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// NewID returns a new id for a task, report or invite: a version 7 UUID
// (RFC 9562), whose first 48 bits are the Unix time in milliseconds and
// whose other 74 bits, besides version and variant, are random. An id made
// later sorts after one made in an earlier millisecond, so a new row's id
// goes at the end of its primary-key index and of the indexes holding task
// ids (reports_task, tasks_parent) rather than on a random page of each: a
// commit writes fewer pages, and the pages new rows touch stay in SQLite's
// cache however large the database grows. Clients see an opaque UUID, as
// before (upstream's were version 4, which are still accepted everywhere).
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[6:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// tokenShaped matches agent and run tokens and invite codes (a cca_, ccr_
// or cci_ prefix and at least 20 base64url characters).
var tokenShaped = regexp.MustCompile(`(?:cca|ccr|cci)_[A-Za-z0-9_-]{20,}`)

// minSecret is the shortest secret RedactSecrets hides by value: a shorter
// one would hide ordinary words.
const minSecret = 8

// RedactSecrets replaces every occurrence of the given secrets (those of
// at least 8 characters), and anything shaped like an agent token, run
// token or invite code, in s with "[hidden]". It is how a run's output and
// reports are kept from leaking the keys of the relay.
//
// A secret is also found in its common encodings (SecretForms): base64 in
// the standard and URL alphabets, padded or not and at any offset inside a
// longer base64 text, hex in either case, and URL-escaped, also when split
// across lines (`base64` and `xxd -p` wrap their output; not when split by
// spaces). Text stored in pieces (a run log's output lines) is checked
// across the breaks between pieces with RedactAcross. That stops the
// accidental and the lazy leak (`base64 api-token`), not a determined one:
// a process that can read the secret can also transform it in ways no
// filter can list (see docs/security.md).
func RedactSecrets(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		for _, f := range SecretForms(sec) {
			if strings.Contains(s, f) {
				s = strings.ReplaceAll(s, f, "[hidden]")
			}
		}
	}
	s = redactWrapped(s, secrets)
	if strings.Contains(s, "_") {
		s = tokenShaped.ReplaceAllString(s, "[hidden]")
	}
	return s
}

// formCache keeps SecretForms' answers for the few secrets in use (the
// admin token, the run tokens of running workers): secret → []string. It is
// read without a lock on every scrub; formCount bounds it.
var (
	formCache sync.Map
	formCount atomic.Int64
)

// maxCachedSecrets bounds formCache; it starts afresh when full.
const maxCachedSecrets = 64

// SecretForms returns sec and the encodings of it that RedactSecrets
// hides, longest first (so a form is replaced before a shorter one inside
// it). For base64 it holds, per alphabet, the characters that encode only
// sec's bytes at each of the three offsets sec can start at in a longer
// base64 text, so the secret is found wherever it was encoded. The slice
// is shared: callers must not change it.
func SecretForms(sec string) []string {
	if f, ok := formCache.Load(sec); ok {
		return f.([]string)
	}
	forms := []string{sec, hex.EncodeToString([]byte(sec)), strings.ToUpper(hex.EncodeToString([]byte(sec))),
		urlEscape(sec, "+", ""), urlEscape(sec, "%20", "$&+,:;=@"), percentEncode(sec, "%%%02X"), percentEncode(sec, "%%%02x")}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(sec)))
		for k := range 3 {
			forms = append(forms, base64Core(enc.WithPadding(base64.NoPadding), sec, k))
		}
	}
	seen := map[string]bool{}
	out := forms[:0]
	for _, f := range forms {
		if len(f) >= minSecret && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	if formCount.Add(1) > maxCachedSecrets {
		formCache.Clear()
		formCount.Store(1)
	}
	formCache.Store(sec, out)
	return out
}

// base64Core is the part of the base64 of sec, preceded by k other bytes,
// that depends on sec's bytes alone: the same whatever comes before or
// after it.
func base64Core(enc *base64.Encoding, sec string, k int) string {
	full := enc.EncodeToString(append(make([]byte, k), sec...))
	start := (8*k + 5) / 6        // the first character with no bit of the k bytes
	end := 8 * (k + len(sec)) / 6 // past the last character made only of sec's bits
	if end > len(full) || start >= end {
		return ""
	}
	return full[start:end]
}

// urlEscape is s URL-escaped the way url.QueryEscape (space "+", keep "")
// or url.PathEscape (space "%20", keep "$&+,:;=@") writes it: every byte
// but the unreserved ones (letters, digits, "-", ".", "_", "~") and keep
// as %XX. The domain does not import net/url.
func urlEscape(s, space, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~',
			c != ' ' && strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		case c == ' ':
			b.WriteString(space)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// percentEncode writes every byte of s as a %XX escape in format.
func percentEncode(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}
