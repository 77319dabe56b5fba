package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcMemory is this process's resident memory, in bytes.
type ProcMemory struct {
	// RSS is VmRSS, the resident set now.
	RSS int64
	// Peak is VmHWM, the resident set's high-water mark.
	Peak int64
	// Anon is RssAnon, the anonymous part of RSS (0 when the kernel does
	// not report it).
	Anon int64
}

// ReadMemory reads VmRSS and VmHWM from /proc/self/status (Linux only).
func ReadMemory() (ProcMemory, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ProcMemory{}, fmt.Errorf("read process memory: %w", err)
	}
	return ParseStatus(b)
}

// ParseStatus reads VmRSS and VmHWM (in kB) from the text of a
// /proc/<pid>/status file.
func ParseStatus(status []byte) (ProcMemory, error) {
	var m ProcMemory
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssAnon") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("process memory: unexpected %s line %q", key, val)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("process memory: %s: %w", key, err)
		}
		switch key {
		case "VmRSS":
			m.RSS = kb << 10
			found++
		case "VmHWM":
			m.Peak = kb << 10
			found++
		default:
			m.Anon = kb << 10
		}
	}
	if found != 2 {
		return m, fmt.Errorf("process memory: VmRSS or VmHWM missing")
	}
	return m, nil
}
