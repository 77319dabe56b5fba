package sandbox

import (
	"fmt"
	"strings"
)

// Profile is the macOS sandbox-exec profile (SBPL) of the rules: deny by
// default; processes, the network, and the system services a CLI needs
// allowed; the system and RO paths readable; RW paths, the temporary
// folder and the devices readable and writable.
func Profile(r Rules) string {
	var b strings.Builder
	b.WriteString("(version 1)\n(deny default)\n")
	b.WriteString("(allow process-fork process-exec signal (target same-sandbox))\n")
	b.WriteString("(allow network*)\n")
	b.WriteString("(allow sysctl-read mach-lookup ipc-posix-shm* iokit-open file-read-metadata pseudo-tty)\n")
	b.WriteString("(allow file-read* file-write* (literal \"/dev/null\") (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\") (literal \"/dev/ptmx\"))\n")
	b.WriteString("(allow file-read* (literal \"/\"))\n")
	writeRule(&b, "file-read* process-exec", append(append([]string{}, r.System...), r.RO...))
	rw := append([]string{}, r.RW...)
	if r.TempDir != "" {
		rw = append(rw, r.TempDir)
	}
	writeRule(&b, "file-read* file-write* process-exec", append(rw, r.Devices...))
	return b.String()
}

// writeRule writes one allow rule for the paths (each a subpath), or
// nothing when there are none.
func writeRule(b *strings.Builder, ops string, paths []string) {
	if len(paths) == 0 {
		return
	}
	fmt.Fprintf(b, "(allow %s", ops)
	for _, p := range paths {
		fmt.Fprintf(b, "\n  (subpath %s)", quote(p))
	}
	b.WriteString(")\n")
}

// quote is an SBPL string literal: backslashes and double quotes escaped,
// control characters as \xHH (a path cannot end the literal early).
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
