package mesh

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File names in the data folder.
const (
	identityFile = "mesh-relay.json"
	keyFile      = "mesh-relay.key"
)

// Identity is a relay's stable id, its name and its Ed25519 key pair.
type Identity struct {
	ID   string
	Name string
	// PublicKey is the base64 (standard, padded) Ed25519 public key.
	PublicKey string
	priv      ed25519.PrivateKey
}

type identityJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// LoadIdentity reads the relay's identity from dir, creating it on first use:
// a random id, the given name (default: the host name) and a new key pair,
// the private key in a 0600 file. A non-empty name replaces the stored one.
func LoadIdentity(dir, name string) (Identity, error) {
	var id Identity
	ipath, kpath := filepath.Join(dir, identityFile), filepath.Join(dir, keyFile)
	var stored identityJSON
	b, err := os.ReadFile(ipath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		raw := make([]byte, 8)
		if _, err := rand.Read(raw); err != nil {
			return id, fmt.Errorf("mesh identity: %w", err)
		}
		stored.ID = hex.EncodeToString(raw)
	case err != nil:
		return id, fmt.Errorf("mesh identity: %w", err)
	default:
		if err := json.Unmarshal(b, &stored); err != nil || !validRelayID(stored.ID) {
			return id, fmt.Errorf("mesh identity %s: not a relay identity (%v)", ipath, err)
		}
	}
	if name = strings.TrimSpace(name); name != "" {
		stored.Name = name
	}
	if stored.Name == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "relay-" + stored.ID[:6]
		}
		stored.Name = host
	}
	if len(stored.Name) > 80 {
		stored.Name = stored.Name[:80]
	}
	out, _ := json.MarshalIndent(stored, "", "  ") // a struct of strings always marshals
	if !errors.Is(err, fs.ErrNotExist) && string(out) == string(b) {
		// unchanged
	} else if err := writeFile(ipath, out); err != nil {
		return id, fmt.Errorf("mesh identity: %w", err)
	}
	kb, err := os.ReadFile(kpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return id, fmt.Errorf("mesh key: %w", err)
		}
		if err := writeFile(kpath, []byte(base64.StdEncoding.EncodeToString(priv.Seed())+"\n")); err != nil {
			return id, fmt.Errorf("mesh key: %w", err)
		}
		id.priv = priv
	case err != nil:
		return id, fmt.Errorf("mesh key: %w", err)
	default:
		seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(kb)))
		if err != nil || len(seed) != ed25519.SeedSize {
			return id, fmt.Errorf("mesh key %s: not an Ed25519 seed", kpath)
		}
		id.priv = ed25519.NewKeyFromSeed(seed)
	}
	id.ID, id.Name = stored.ID, stored.Name
	id.PublicKey = base64.StdEncoding.EncodeToString(id.priv.Public().(ed25519.PublicKey))
	return id, nil
}

// writeFile writes b to path with mode 0600 through a temporary file.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// validRelayID accepts what LoadIdentity makes: lower-case hex, 16 characters.
func validRelayID(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// sign returns the base64 Ed25519 signature of msg with the relay's key.
func (id Identity) sign(msg []byte) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(id.priv, msg))
}
