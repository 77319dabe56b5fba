package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// freeName returns path, or path with a number before its extension when
// path is taken.
func freeName(path string) (string, error) {
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext)
	for i := 1; i < 1000; i++ {
		p := path
		if i > 1 {
			p = fmt.Sprintf("%s-%d%s", base, i, ext)
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free file name like %s", path)
}

// dbSuffixes are the files of one SQLite database.
var dbSuffixes = []string{"", "-wal", "-shm"}

// copyDB copies the database file and its WAL (if any) to dst.
func copyDB(src, dst string) error {
	for _, s := range dbSuffixes[:2] {
		if err := copyFile(src+s, dst+s); err != nil {
			if s != "" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Sync()
}

// moveDB renames a database and its WAL and shared-memory files.
func moveDB(src, dst string) error {
	for _, s := range dbSuffixes {
		if err := os.Rename(src+s, dst+s); err != nil && !(s != "" && errors.Is(err, os.ErrNotExist)) {
			return err
		}
	}
	return nil
}

func removeDB(path string) error {
	var errs []error
	for _, s := range dbSuffixes {
		if err := os.Remove(path + s); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
