package mesh

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// embedCredFile holds the embedded server's credential in the data folder.
const embedCredFile = "mesh-nats-embed.json"

// EmbedCredential is the user and password the embedded server requires;
// zero when it lets anyone in (--nats-embed-open).
type EmbedCredential struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// LoadEmbedCredential reads the embedded server's credential from dir,
// creating it (owner-only, a random 32-byte password) on first use. A file
// others can read (copied, or made by hand) is made owner-only again.
func LoadEmbedCredential(dir string) (EmbedCredential, error) {
	var c EmbedCredential
	path := filepath.Join(dir, embedCredFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return c, fmt.Errorf("mesh: embedded NATS credential: %w", err)
		}
		c = EmbedCredential{User: "crosschat", Password: hex.EncodeToString(raw)}
		out, _ := json.MarshalIndent(c, "", "  ") // a struct of strings always marshals
		if err := writeFile(path, out); err != nil {
			return c, fmt.Errorf("mesh: embedded NATS credential: %w", err)
		}
		return c, nil
	case err != nil:
		return c, fmt.Errorf("mesh: embedded NATS credential: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil || c.User == "" || len(c.Password) < 16 {
		return c, fmt.Errorf("mesh: embedded NATS credential %s: not a credential (%v)", path, err)
	}
	if runtime.GOOS != "windows" {
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return c, fmt.Errorf("mesh: embedded NATS credential %s is readable by others and cannot be made owner-only: %w", path, err)
			}
		}
	}
	return c, nil
}

// startEmbedded runs a NATS server with JetStream in this process, listening
// on addr (HOST:PORT; port -1 picks a free one) and storing in dir. With a
// credential it refuses clients that do not give it.
func startEmbedded(addr, dir, name string, cred EmbedCredential) (*server.Server, error) {
	host, portS, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mesh: embedded NATS address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < -1 || port > 65535 {
		return nil, fmt.Errorf("mesh: embedded NATS address %q: bad port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port > 0 {
		// NATS only logs a port it cannot bind and never becomes ready: say
		// so at once rather than after the 30 s wait below.
		ln, err := net.Listen("tcp", net.JoinHostPort(host, portS))
		if err != nil {
			return nil, fmt.Errorf("mesh: embedded NATS address %s: %w", addr, err)
		}
		ln.Close()
	}
	srv, err := server.NewServer(&server.Options{
		Username:   cred.User,
		Password:   cred.Password,
		ServerName: name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		// The relay's own data folder is owner-only; JetStream keeps it so.
		MaxPayload: 8 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("mesh: embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("mesh: embedded NATS on %s did not start", addr)
	}
	return srv, nil
}
