//go:build windows

package config

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// restrictToOwner is the Windows form of the data folder's 0700: a
// protected access list (nothing inherited from the parent) that gives full
// control to the current user and to SYSTEM only, inherited by everything
// in the folder. A folder made under C:\ would otherwise let every
// signed-in user read relay.db and api-token (Authenticated Users: Modify).
// Existing files in the folder take the new list too. Drives without
// access lists (FAT, exFAT) are left as they are.
func restrictToOwner(dir string) error {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return fmt.Errorf("restrict data dir: current user: %w", err)
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		return fmt.Errorf("restrict data dir: %w", err)
	}
	entries := make([]windows.EXPLICIT_ACCESS, 0, 2)
	for _, sid := range []*windows.SID{user.User.Sid, system} {
		entries = append(entries, windows.EXPLICIT_ACCESS{
			AccessPermissions: windows.GENERIC_ALL,
			AccessMode:        windows.GRANT_ACCESS,
			Inheritance:       windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT,
			Trustee: windows.TRUSTEE{
				TrusteeForm:  windows.TRUSTEE_IS_SID,
				TrusteeType:  windows.TRUSTEE_IS_UNKNOWN,
				TrusteeValue: windows.TrusteeValueFromSID(sid),
			},
		})
	}
	acl, err := windows.ACLFromEntries(entries, nil)
	if err != nil {
		return fmt.Errorf("restrict data dir: %w", err)
	}
	err = windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, acl, nil)
	switch err {
	case nil:
		return nil
	case windows.ERROR_NOT_SUPPORTED, windows.ERROR_INVALID_FUNCTION:
		// FAT and exFAT drives keep no access lists: nothing to restrict.
		return nil
	}
	return fmt.Errorf("restrict data dir %s: %w", dir, err)
}
