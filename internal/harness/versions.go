package harness

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// TestedRange is the span of an agent CLI's versions that the e2e tests
// run against: Oldest is the pin of .ci/clis (the oldest lane), Newest the
// pin of .ci/clis-current. TestTestedRangesMatchThePins keeps them equal.
type TestedRange struct {
	Oldest, Newest string
}

// String is "Oldest–Newest", or the one version when both are equal.
func (r TestedRange) String() string {
	if r.Oldest == r.Newest {
		return r.Oldest
	}
	return r.Oldest + "–" + r.Newest
}

// testedRanges are the tested versions of the presets the CI lanes pin.
var testedRanges = map[string]TestedRange{
	ClaudeCode: {Oldest: "2.1.197", Newest: "2.1.332"},
	Codex:      {Oldest: "0.171.0", Newest: "0.171.0"},
	Gemini:     {Oldest: "0.61.0", Newest: "0.61.0"},
}

// Tested returns the tested range of preset id; ok is false for presets
// no CI lane runs.
func Tested(id string) (r TestedRange, ok bool) {
	r, ok = testedRanges[id]
	return r, ok
}

// Where a version lies against its preset's tested range.
const (
	VersionTested = "tested" // inside the range
	VersionNewer  = "newer"  // after its newest version
	VersionOlder  = "older"  // before its oldest version
	// "" means unknown: no range for the preset, or no version number read.
)

var versionNumber = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// VersionNumber is the first x.y.z number in a `--version` line ("2.1.332
// (Claude Code)", "codex-cli 0.171.0"), "" when there is none.
func VersionNumber(line string) string {
	return versionNumber.FindString(line)
}

// CheckVersion tells where the version in a `--version` line lies against
// preset id's tested range: VersionTested, VersionNewer, VersionOlder, or
// "" when unknown.
func CheckVersion(id, line string) string {
	r, ok := testedRanges[id]
	v := VersionNumber(line)
	if !ok || v == "" {
		return ""
	}
	switch {
	case compareVersions(v, r.Oldest) < 0:
		return VersionOlder
	case compareVersions(v, r.Newest) > 0:
		return VersionNewer
	}
	return VersionTested
}

// UntestedNote is the run-log line for a version outside the tested range,
// "" when the version is inside it or unknown. The relay runs it anyway.
func UntestedNote(id, line string) string {
	r, _ := testedRanges[id]
	name := id
	if p, ok := Lookup(id); ok {
		name = p.Name
	}
	var where string
	switch CheckVersion(id, line) {
	case VersionNewer:
		where = "newer than"
	case VersionOlder:
		where = "older than"
	default:
		return ""
	}
	return fmt.Sprintf("%s %s is %s the versions this relay was tested with (%s); the run goes ahead.",
		name, VersionNumber(line), where, r)
}

// compareVersions compares two x.y.z numbers numerically.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3; i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// VersionCache reads a program's `--version` once per build of the
// program (its path, size and modification time), for the run log's
// untested-version line. The zero value is ready; it is safe for
// concurrent use.
type VersionCache struct {
	// Env runs the programs; the zero Env runs them for real.
	Env Env

	mu   sync.Mutex
	seen map[string]string // path|size|mtime → version line
}

// Note returns UntestedNote for the program of preset id, reading its
// version when the program changed since the last call ("" when the
// preset has no tested range or the version can't be read).
func (c *VersionCache) Note(ctx context.Context, id, program string) string {
	if _, ok := testedRanges[id]; !ok || program == "" {
		return ""
	}
	fi, err := os.Stat(program)
	if err != nil {
		return ""
	}
	key := fmt.Sprintf("%s|%d|%d", program, fi.Size(), fi.ModTime().UnixNano())
	c.mu.Lock()
	line, ok := c.seen[key]
	c.mu.Unlock()
	if !ok {
		line = version(ctx, c.Env, program)
		c.mu.Lock()
		if c.seen == nil || len(c.seen) > 64 {
			c.seen = map[string]string{}
		}
		c.seen[key] = line
		c.mu.Unlock()
	}
	return UntestedNote(id, line)
}
