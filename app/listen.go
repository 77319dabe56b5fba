package app

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"syscall"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/filelock"
)

// listen opens the relay's listener on cfg's address. When another process
// holds the port, the error (ErrPortTaken) says who in words: the relay
// already serving this data folder, or some other program.
func listen(cfg config.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.Addr())
	switch {
	case err == nil:
		return ln, nil
	case addrInUse(err):
		holder, ours := portHolder(cfg.DataDir)
		return nil, &portTakenError{addr: cfg.Addr(), holder: holder, ours: ours, err: err}
	default:
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr(), err)
	}
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
// when ours (the relay of the same data folder holds it).
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

// portHolder says who holds the port, judged by dataDir's lock: the relay
// serving dataDir holds it (named by its run file), or nobody does and the
// port is another program's (or a relay's with another data folder). It
// only looks: the lock, if taken, is given back at once, and a run file is
// left as it is. ours says the relay of dataDir holds it.
func portHolder(dataDir string) (holder string, ours bool) {
	l, err := filelock.Lock(filepath.Join(dataDir, lockFileName))
	if err == nil {
		l.Unlock()
	}
	if !errors.Is(err, filelock.ErrLocked) {
		return "another program (or a relay with another data folder) listens there: choose another port with --port, or stop that program", false
	}
	who := ""
	if info, ok, rerr := ReadRunFile(dataDir); rerr == nil && ok {
		who = fmt.Sprintf(" (pid %d, %s)", info.PID, info.URL)
	}
	return fmt.Sprintf("Crosschat Relay%s is already running on the data folder %s: `crosschat-relay status` shows it, `crosschat-relay quit` stops it", who, dataDir), true
}
