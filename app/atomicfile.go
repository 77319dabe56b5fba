package app

import (
	"encoding/json"
	"fmt"
	"os"
)

// WriteFileAtomic replaces path with b (mode 0600) by writing a sibling
// .tmp file and renaming it over path, so a reader never sees half a file;
// what names the file in errors.
func WriteFileAtomic(path string, b []byte, what string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// WriteJSONAtomic writes v as indented JSON to path with WriteFileAtomic.
func WriteJSONAtomic(path string, v any, what string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	return WriteFileAtomic(path, b, what)
}
