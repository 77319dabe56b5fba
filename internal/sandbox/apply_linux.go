package sandbox

import (
	"fmt"
	"os"
	"runtime"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI is the kernel's Landlock ABI version, 0 without Landlock.
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// restrict confines the calling thread (locked to it for good) and what it
// execs next to the rules: the filesystem, signals and abstract sockets
// (Landlock), and Unix sockets by path (the seccomp socket filter), so the
// network stays open.
// Best effort over Landlock ABI versions; the audit log of the kernel
// records refused accesses of the programs the thread execs (ABI 7+).
// Without Landlock or seccomp nothing is applied (errNotEnforced,
// errNoSeccomp); a failure once Landlock holds is errHalfConfined.
func restrict(r Rules) error {
	abi := ABI()
	if abi < 1 {
		return errNotEnforced
	}
	filter, err := nativeSocketFilter()
	if err != nil {
		return err
	}
	var rules []landlock.Rule
	add := func(paths []string, write bool) {
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				continue // a missing path needs no rule
			}
			var rule landlock.FSRule
			switch {
			case fi.IsDir() && write:
				rule = landlock.RWDirs(p)
				if abi >= 2 {
					rule = rule.WithRefer() // renames across folders (git, npm)
				}
			case fi.IsDir():
				rule = landlock.RODirs(p)
			case write:
				rule = landlock.RWFiles(p)
			default:
				rule = landlock.ROFiles(p)
			}
			rules = append(rules, rule.IgnoreIfMissing())
		}
	}
	add(r.System, false)
	add(r.RO, false)
	add(r.Devices, true) // files only, without device ioctls
	add(r.RW, true)
	if r.TempDir != "" {
		add([]string{r.TempDir}, true)
	}
	// Files, and from ABI 6 signals and abstract Unix sockets to processes
	// outside the sandbox (the relay, the user's other programs); not the
	// network.
	cfg := landlock.Config{HandledAccessFS: landlock.V8.HandledAccessFS, Scoped: landlock.V8.Scoped}.BestEffort().EnableLoggingForSubprocesses()
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("build the Landlock rules: %w", err)
	}
	if fd < 0 {
		return errNotEnforced
	}
	defer unix.Close(fd)
	runtime.LockOSThread() // never unlocked: the thread execs the CLI
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	if err := installSocketFilter(filter); err != nil {
		return fmt.Errorf("%w: %w", errHalfConfined, err)
	}
	return nil
}
