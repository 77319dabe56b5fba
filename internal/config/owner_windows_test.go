package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// ownerSIDs are the accounts the data folder is for: this user and SYSTEM.
func ownerSIDs(t *testing.T) []string {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		t.Fatal(err)
	}
	sids := []string{user.User.Sid.String(), system.String()}
	slices.Sort(sids)
	return sids
}

// TestDataDirOwnerOnly: on Windows the data folder, and what it already
// holds, end up readable by the current user and SYSTEM only, with nothing
// inherited from the folder it is in.
func TestDataDirOwnerOnly(t *testing.T) {
	want := ownerSIDs(t)
	if os.Getenv("CROSSCHAT_UNDER_WINE") != "" {
		// EnsureDataDir still runs (and must not fail) in the other tests here.
		t.Skip("wine 8.0 keeps no access lists on this filesystem: it derives them from Unix modes (Everyone from the 'other' bits) and drops the protected flag")
	}
	dir := filepath.Join(t.TempDir(), "data dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, DatabaseFile)
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Config{DataDir: dir}).EnsureDataDir(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, old} {
		sd, err := windows.GetNamedSecurityInfo(p, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
		if err != nil {
			t.Fatal(err)
		}
		dacl, _, err := sd.DACL()
		if err != nil || dacl == nil {
			t.Fatalf("%s: no access list (%v)", p, err)
		}
		var got []string
		for i := range uint32(dacl.AceCount) {
			var ace *windows.ACCESS_ALLOWED_ACE
			if err := windows.GetAce(dacl, i, &ace); err != nil {
				t.Fatal(err)
			}
			if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE {
				t.Errorf("%s: an entry of type %d", p, ace.Header.AceType)
			}
			got = append(got, (*windows.SID)(unsafe.Pointer(&ace.SidStart)).String())
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: access for %v, want %v (the user and SYSTEM)", p, got, want)
		}
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	if ctl, _, err := sd.Control(); err != nil || ctl&windows.SE_DACL_PROTECTED == 0 {
		t.Errorf("the data folder inherits access from its parent (control %#x, %v)", ctl, err)
	}
}
