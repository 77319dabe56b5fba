package mesh

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"

	"github.com/nats-io/nkeys"
)

// The relay's mesh key is also its NATS user key: NATS NKEYs are Ed25519
// keys, so the key that signs envelopes and directory entries answers the
// server's nonce too, and a relay needs no other credential.

// NKey returns the relay's public NATS user key ("U…").
func (id Identity) NKey() string {
	k, err := nkeyOf(id.PublicKey)
	if err != nil {
		return "" // LoadIdentity always makes a valid key
	}
	return k
}

// signNonce answers the NATS server's nonce with the relay's key.
func (id Identity) signNonce(nonce []byte) ([]byte, error) {
	if len(id.priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("mesh: no relay key loaded")
	}
	return ed25519.Sign(id.priv, nonce), nil
}

// nkeyOf converts a base64 Ed25519 public key (as the directory and the
// store keep it) into its NATS user key.
func nkeyOf(pub string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(pub)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return "", fmt.Errorf("mesh: %q is not an Ed25519 public key", pub)
	}
	k, err := nkeys.Encode(nkeys.PrefixByteUser, raw)
	if err != nil {
		return "", fmt.Errorf("mesh: encode NATS key: %w", err)
	}
	return string(k), nil
}

// keyOfNKey converts a NATS user key back into the base64 Ed25519 public key.
func keyOfNKey(nkey string) (string, error) {
	raw, err := nkeys.Decode(nkeys.PrefixByteUser, []byte(nkey))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return "", fmt.Errorf("mesh: %q is not a NATS user key", nkey)
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}
