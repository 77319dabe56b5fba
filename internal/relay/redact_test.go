package relay_test

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestRedactEncodedSecrets ensures a secret is hidden in its common
// encodings, alone or inside longer text, and ordinary text is kept.
func TestRedactEncodedSecrets(t *testing.T) {
	sec := relay.NewAdminToken()
	b := []byte(sec)
	for _, tc := range []struct{ name, text string }{
		{"plain", "token: " + sec},
		{"base64", "b64 " + base64.StdEncoding.EncodeToString(b)},
		{"base64 raw", base64.RawStdEncoding.EncodeToString(b) + "."},
		{"base64url", base64.URLEncoding.EncodeToString(b)},
		{"base64url raw", "x" + base64.RawURLEncoding.EncodeToString(b)},
		{"base64 after 1 byte", base64.StdEncoding.EncodeToString(append([]byte("a"), b...))},
		{"base64 after 2 bytes", base64.StdEncoding.EncodeToString(append([]byte("ab"), b...))},
		{"base64 inside a file", base64.StdEncoding.EncodeToString([]byte("CROSSCHAT_API_TOKEN=" + sec + "\nOTHER=1\n"))},
		{"base64url after 2 bytes", base64.RawURLEncoding.EncodeToString(append([]byte("ab"), append(b, '\n')...))},
		{"hex", "0x" + hex.EncodeToString(b)},
		{"HEX", strings.ToUpper(hex.EncodeToString(b))},
		{"url", "https://evil.example/?t=" + url.QueryEscape(sec)},
		{"url of an odd secret", "?t=" + url.QueryEscape("pa ss/wo+rd=1234")},
		{"url path of an odd secret", "/t/" + url.PathEscape("pa ss/wo+rd=1234")},
		{"percent every byte", percentAll(sec)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := sec
			if strings.Contains(tc.name, "odd") {
				sec = "pa ss/wo+rd=1234"
			}
			got := relay.RedactSecrets(tc.text, sec)
			if !strings.Contains(got, "[hidden]") {
				t.Fatalf("not hidden: %q", got)
			}
			for _, f := range relay.SecretForms(sec) {
				if strings.Contains(got, f) {
					t.Fatalf("form %q left in %q", f, got)
				}
			}
		})
	}
	for _, keep := range []string{"nothing secret here", "aGVsbG8gd29ybGQ=", "68656c6c6f"} {
		if got := relay.RedactSecrets(keep, sec); got != keep {
			t.Errorf("%q became %q", keep, got)
		}
	}
}

func percentAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{s[i]})))
	}
	return b.String()
}

// FuzzRedactSecrets checks that no form of a secret survives redaction,
// whatever the text around it and its encoding's offset.
func FuzzRedactSecrets(f *testing.F) {
	f.Add("0123456789abcdefghij", "prefix ", " suffix", uint8(0))
	f.Add("s3cr3t-s3cr3t", "", "", uint8(1))
	f.Add("ccr_abcdefghijklmnopqrstuvwxyz", "x", "yy", uint8(2))
	f.Fuzz(func(t *testing.T, sec, before, after string, enc uint8) {
		if len(sec) < 8 || len(sec) > 200 || strings.ContainsAny(sec, "[]") {
			return
		}
		var text string
		switch enc % 4 {
		case 0:
			text = before + sec + after
		case 1:
			text = base64.StdEncoding.EncodeToString([]byte(before + sec + after))
		case 2:
			text = base64.RawURLEncoding.EncodeToString([]byte(before + sec + after))
		case 3:
			text = before + hex.EncodeToString([]byte(sec)) + after
		}
		got := relay.RedactSecrets(text, sec)
		for _, form := range relay.SecretForms(sec) {
			if strings.Contains(got, form) {
				t.Fatalf("form %q of %q left in %q", form, sec, got)
			}
		}
	})
}
