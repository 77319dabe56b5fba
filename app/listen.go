package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/filelock"
	"github.com/crosschat/crosschat-relay/internal/loopback"
)

// listen opens the relay's listener on cfg's address. When another process
// holds the port, the error (ErrPortTaken) says who in words: the relay
// already serving this data folder, or some other program.
//
// On the default loopback address the relay holds the port on both
// loopback addresses, 127.0.0.1 and [::1] (twinLoopback): its URLs say
// localhost, which clients (browsers always, Go and Node where the hosts
// file says so) try on [::1] first, so a port left free there would let any
// local process listen in its place and be handed tokens.
func listen(cfg config.Config) (net.Listener, error) {
	twin, ok := twinLoopback(cfg.Host)
	if !ok {
		return listenOne(cfg, cfg.Addr())
	}
	primary := cfg.Addr()
	if twin == "::1" { // 127.0.0.1 for localhost too
		primary = net.JoinHostPort(config.DefaultHost, strconv.Itoa(cfg.Port))
	}
	// A port the system picks (0) is picked on the first address; it may
	// be taken on the second, so a few picks are tried.
	for try := 0; ; try++ {
		ln, err := listenOne(cfg, primary)
		if err != nil {
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		other, err := net.Listen("tcp", net.JoinHostPort(twin, strconv.Itoa(port)))
		switch {
		case err == nil:
			return newPairListener(ln, other), nil
		case addrInUse(err) && cfg.Port == 0 && try < 8:
			ln.Close()
			continue
		case addrInUse(err):
			ln.Close()
			addr := net.JoinHostPort(twin, strconv.Itoa(port))
			return nil, &portTakenError{addr: addr, err: err,
				holder: "another program listens on the other loopback address of this port, where clients that name localhost may connect instead of the relay: choose another port with --port, or stop that program"}
		default:
			// No such address here (IPv6 turned off, say, or a system
			// that offers none): nothing can listen there and no client
			// goes there. Only a holder of the port is refused.
			return ln, nil
		}
	}
}

// listenOne listens on addr, naming who holds it when it is taken.
func listenOne(cfg config.Config, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case addrInUse(err):
		holder, ours := portHolder(cfg)
		return nil, &portTakenError{addr: addr, holder: holder, ours: ours, err: err}
	default:
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
}

// twinLoopback gives the other loopback address the relay also holds when
// host is the default loopback one (127.0.0.1, [::1] or localhost, in any
// spelling loopback.Host takes, which BaseURL advertises as localhost); ok
// is false for any other host (an every-address host holds both already, a
// LAN or other loopback address is advertised as itself).
func twinLoopback(host string) (twin string, ok bool) {
	switch loopback.Canonical(host) {
	case "127.0.0.1", "localhost":
		return "::1", true
	case "::1":
		return "127.0.0.1", true
	}
	return "", false
}

// wsaeAddrInUse is Windows' WSAEADDRINUSE, which syscall.EADDRINUSE (an
// errno of its own there) does not match.
const wsaeAddrInUse = syscall.Errno(10048)

// addrInUse reports whether err is a listen refused because the address
// is taken.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, wsaeAddrInUse)
}

// ErrPortTaken is what errors.Is finds in a start refused because its
// port is taken, on every system (the window then shows the running one).
var ErrPortTaken = errors.New("port taken")

// ErrAlreadyRunning is what errors.Is finds in a start refused because a
// relay already serves its data folder (the lock, or the port held by
// that relay): nothing failed, so serve says it on its terminal and not in
// that relay's log.
var ErrAlreadyRunning = errors.New("a relay already serves the data folder")

// portTakenError is a listen refused because the port is taken. It
// unwraps to the system's error and is ErrPortTaken, and ErrAlreadyRunning
// when ours (the relay of the same data folder runs).
type portTakenError struct {
	addr, holder string
	ours         bool
	err          error
}

func (e *portTakenError) Error() string {
	return fmt.Sprintf("%s: address already in use: %s", e.addr, e.holder)
}

func (e *portTakenError) Unwrap() error { return e.err }

func (e *portTakenError) Is(target error) bool {
	return target == ErrPortTaken || target == ErrAlreadyRunning && e.ours
}

// portHolder says who holds cfg's port: the relay serving cfg's data
// folder when it holds the folder's lock and its run file names that port
// (its pid and address named, and the flags that reach it, as the banner
// prints them), else another program (or a relay with another data folder). It
// only looks: the lock, if free, is given back at once (lockDataDir waits
// out such a look), and a run file is left as it is. ours says the relay
// of dataDir runs (holding the port or not): the start could not have
// gone on anyway.
func portHolder(cfg config.Config) (holder string, ours bool) {
	dataDir, port := cfg.DataDir, cfg.Port
	const other = "another program (or a relay with another data folder) listens there: choose another port with --port, or stop that program"
	l, err := filelock.Lock(filepath.Join(dataDir, lockFileName))
	if err == nil {
		l.Unlock()
	}
	info, ok, rerr := ReadRunFile(dataDir)
	if !errors.Is(err, filelock.ErrLocked) || rerr != nil || !ok {
		return other, false
	}
	if u, uerr := url.Parse(info.URL); uerr != nil || u.Port() != strconv.Itoa(port) {
		// The folder's relay runs, elsewhere: the port is not its (and
		// the folder is, so nothing failed).
		return fmt.Sprintf("%s (the relay of the data folder %s runs at %s)", other, dataDir, info.URL), true
	}
	at := locationArgs(cfg)
	return fmt.Sprintf("Crosschat Relay (pid %d, %s) is already running on the data folder %s: `crosschat-relay status%s` shows it, `crosschat-relay quit%s` stops it", info.PID, info.URL, dataDir, at, at), true
}
