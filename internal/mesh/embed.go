package mesh

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startEmbedded runs a NATS server with JetStream in this process, listening
// on addr (HOST:PORT; port -1 picks a free one) and storing in dir.
func startEmbedded(addr, dir, name string) (*server.Server, error) {
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
