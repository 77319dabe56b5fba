package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/config"
)

// Ensure the admin token file another relay has created and not yet
// written is waited for, not reported empty (two relays starting on a new
// data folder at the same moment: one creates it, the other reads it), and
// that a file that stays empty is still an error that says what to do.
func TestAdminTokenWrittenMeanwhile(t *testing.T) {
	c := config.Config{DataDir: t.TempDir()}
	if err := os.WriteFile(c.TokenPath(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		written <- os.WriteFile(c.TokenPath(), []byte("cca_written_meanwhile\n"), 0o600)
	}()
	tok, err := c.AdminToken(true)
	if werr := <-written; werr != nil {
		t.Fatal(werr)
	}
	if err != nil || tok != "cca_written_meanwhile" {
		t.Fatalf("AdminToken while another relay writes it = %q, %v", tok, err)
	}

	empty := config.Config{DataDir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(empty.DataDir, config.TokenFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := empty.AdminToken(false); err == nil || !strings.Contains(err.Error(), "is empty: delete it") {
		t.Fatalf("AdminToken of a file that stays empty = %v", err)
	}
}
