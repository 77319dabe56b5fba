package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeApt writes apt-get and dpkg-query stand-ins into a folder for .ci/apt.sh:
// dpkg-query knows the packages in installed; apt-get update exits with
// updateRC and apt-get install with installRC. Every apt-get call is logged.
func fakeApt(t *testing.T, installed string, updateRC, installRC int) (bin, log string) {
	t.Helper()
	bin = t.TempDir()
	log = filepath.Join(bin, "calls.log")
	scripts := map[string]string{
		"dpkg-query": `#!/bin/sh
for p in ` + installed + `; do [ "$p" = "$3" ] && { echo "install ok installed"; exit 0; }; done
exit 1
`,
		"apt-get": `#!/bin/sh
echo "$*" >>` + log + `
case "$1" in
update) echo "E: File has unexpected size (371952 != 372316). Mirror sync in progress?" >&2; exit ` + itoa(updateRC) + ` ;;
esac
exit ` + itoa(installRC) + `
`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin, log
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	return "100"
}

// The CI's apt step survives a mirror whose index is mid-sync: the update is
// retried, the install goes ahead, and only a failed install fails the step.
func TestCIAptToleratesBrokenIndex(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", ".ci", "apt.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                string
		installed           string
		updateRC, installRC int
		wantOK              bool
		wantCalls           []string // apt-get calls, in order (first word each)
		wantOut             string
	}{
		{"nothing missing", "a b", 0, 0, true, nil, "all present"},
		{"update fails, install works", "a", 1, 0, true, []string{"update", "update", "update", "install"}, "warning: apt-get update failed on every try"},
		{"update and install fail", "", 1, 1, false, []string{"update", "update", "update", "install"}, "apt-get install failed for: a b"},
		{"clean run", "", 0, 0, true, []string{"update", "install"}, "installing: a b"},
		{"install fails after a good update", "", 0, 1, false, []string{"update", "install"}, "apt-get install failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin, log := fakeApt(t, tc.installed, tc.updateRC, tc.installRC)
			cmd := exec.Command("bash", "-c", `. "$1"; apt_missing a b`, "bash", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "APT_RETRY_DELAY=0")
			out, err := cmd.CombinedOutput()
			if ok := err == nil; ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v; output:\n%s", ok, tc.wantOK, out)
			}
			if !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, out)
			}
			calls, _ := os.ReadFile(log)
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
				if f := strings.Fields(l); len(f) > 0 {
					got = append(got, f[0])
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.wantCalls, ",") {
				t.Errorf("apt-get calls = %v, want %v", got, tc.wantCalls)
			}
		})
	}
}
