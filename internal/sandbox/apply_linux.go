package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"

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
// network stays open. Only a process that then execs the CLI calls it
// (execVerb's, or Verb's on a kernel without subreapers), never the run's
// reaper.
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
	var opened []int
	defer func() {
		for _, fd := range opened {
			_ = unix.Close(fd)
		}
	}()
	// add adds a rule per path. The system folders and devices (the
	// system's own) are opened by path; the others (the user's, resolved
	// by the relay, which a process of the user's could swap for a link
	// since) without following any link (openat2 RESOLVE_NO_SYMLINKS), the
	// rule made from that very file through /proc/self/fd: a path that is
	// now a link, or lies under one, stops the run.
	add := func(paths []string, write, user bool) error {
		for _, p := range paths {
			target, isDir := p, false
			if user {
				fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
				switch {
				case errors.Is(err, unix.ELOOP):
					return fmt.Errorf("the path %s is a symbolic link now, or lies under one, though it was not when the run was prepared", p)
				case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EACCES):
					continue // a missing path needs no rule
				case err != nil:
					return fmt.Errorf("open %s for its rule: %w", p, err)
				}
				opened = append(opened, fd)
				var st unix.Stat_t
				if err := unix.Fstat(fd, &st); err != nil {
					return fmt.Errorf("stat %s for its rule: %w", p, err)
				}
				target, isDir = "/proc/self/fd/"+strconv.Itoa(fd), st.Mode&unix.S_IFMT == unix.S_IFDIR
			} else {
				fi, err := os.Stat(p)
				if err != nil {
					continue // a missing path needs no rule
				}
				isDir = fi.IsDir()
			}
			var rule landlock.FSRule
			switch {
			case isDir && write:
				rule = landlock.RWDirs(target)
				if abi >= 2 {
					rule = rule.WithRefer() // renames across folders (git, npm)
				}
			case isDir:
				rule = landlock.RODirs(target)
			case write:
				rule = landlock.RWFiles(target)
			default:
				rule = landlock.ROFiles(target)
			}
			if !user {
				rule = rule.IgnoreIfMissing()
			}
			rules = append(rules, rule)
		}
		return nil
	}
	rw := r.RW
	if r.TempDir != "" {
		rw = append(slices.Clone(rw), r.TempDir)
	}
	if err := errors.Join(add(r.System, false, false), add(r.RO, false, true),
		add(r.Devices, true, false), add(rw, true, true)); err != nil { // devices: files only, without device ioctls
		return err
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
