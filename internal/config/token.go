package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// EnsureDataDir creates the data directory, owner-only (0700; on Windows an
// access list for the user and SYSTEM only), and tightens an existing one
// that is wider.
func (c Config) EnsureDataDir() error {
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	st, err := os.Stat(c.DataDir)
	if err != nil {
		return fmt.Errorf("stat data dir: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(c.DataDir, 0o700); err != nil {
			return fmt.Errorf("restrict data dir: %w", err)
		}
	}
	return restrictToOwner(c.DataDir)
}

// ErrNoToken means there is no admin token yet: the relay never ran with this data dir.
var ErrNoToken = errors.New("no admin token")

// tokenWriteWait is how long an empty admin token file is read again,
// for a relay that has created it and not yet written it.
const tokenWriteWait = time.Second

// AdminToken returns the admin token: CROSSCHAT_API_TOKEN if set, else the
// api-token file in the data dir. When create is true and neither exists, a
// new token is generated and written (0600, never overwriting a file that
// appeared meanwhile). The token is never logged.
func (c Config) AdminToken(create bool) (string, error) {
	if c.APIToken != "" {
		return c.APIToken, nil
	}
	b, err := os.ReadFile(c.TokenPath())
	// A relay starting at the same moment creates the file, then writes
	// it: an empty one is read again for a moment before it is an error.
	for wait := time.Now().Add(tokenWriteWait); err == nil && len(bytes.TrimSpace(b)) == 0 && time.Now().Before(wait); {
		time.Sleep(20 * time.Millisecond)
		b, err = os.ReadFile(c.TokenPath())
	}
	if err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("%s is empty: delete it to generate a new admin token", c.TokenPath())
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	if !create {
		return "", fmt.Errorf("%w in %s: start the relay once, name the data folder of the running relay with --data-dir or %s, or set %s", ErrNoToken, c.TokenPath(), EnvDataDir, EnvAPIToken)
	}
	if err := c.EnsureDataDir(); err != nil {
		return "", err
	}
	tok := relay.NewAdminToken()
	f, err := os.OpenFile(c.TokenPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return c.AdminToken(false)
	}
	if err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write admin token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	return tok, nil
}
