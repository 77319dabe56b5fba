package benchrun

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
)

// The bench's floor service (`bench --floor-child DIR`) is a do-nothing Go
// HTTP service in a process of its own, as the relay is: each POST writes
// and fsyncs bench.FloorWrite bytes in DIR before it answers. Timed after
// the same idle gap as the wake-up phase, it shows what this machine needs
// for a request that commits once, with no relay code in the way. It prints
// "ready <url>" and serves until the end of stdin.

// ServeFloor is the floor service's side: it serves the floor service on
// a random loopback port, writing in dir, prints its ready line and serves
// until stdin ends.
func ServeFloor(dir string, stdin io.Reader, stdout io.Writer) (err error) {
	fs, err := bench.NewFloorServer(dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, fs.Close()) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	srv := &http.Server{Handler: fs, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		err = errors.Join(err, srv.Close())
		if sErr := <-served; !errors.Is(sErr, http.ErrServerClosed) {
			err = errors.Join(err, fmt.Errorf("bench floor: %w", sErr))
		}
	}()
	if _, err := fmt.Fprintf(stdout, "ready http://%s/\n", ln.Addr()); err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	if _, err := io.Copy(io.Discard, stdin); err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	return nil
}
