package relay

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// IdentityProof is the proof a relay gives (GET /bridge/identity) that it
// holds adminToken: an HMAC of the caller's random challenge. The CLI verbs
// and a second launch of the app check it before they send the admin
// token, so the token never goes to another program that took the relay's
// port. The proof reveals nothing about the token, and no other credential
// is an HMAC under it.
func IdentityProof(adminToken, challenge string) string {
	mac := hmac.New(sha256.New, []byte(adminToken))
	mac.Write([]byte("crosschat-relay identity v1\n" + challenge))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
