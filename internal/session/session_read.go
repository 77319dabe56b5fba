package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxFile bounds the bytes read of one transcript file; the rest is not
// read.
const maxFile = 64 << 20

// errNotRegular refuses a transcript that is not a regular file (a link,
// a FIFO, a device).
var errNotRegular = errors.New("not a regular file")

// openRegular opens path for reading only when it is a regular file: a
// symbolic link is not followed and a FIFO is not waited on.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// eachLine calls fn with each line of the file (a regular file, at most
// its first maxFile bytes) that is at most maxLine bytes; longer lines are
// skipped. fn returns false to stop; so does ctx, with its error.
func eachLine(ctx context.Context, path string, fn func([]byte) bool) error {
	f, _, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.LimitReader(f, maxFile), 64<<10)
	var line []byte
	tooLong := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk, isPrefix, err := r.ReadLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > maxLine {
				tooLong, line = true, line[:0]
			}
		}
		if isPrefix {
			continue
		}
		if !tooLong && len(line) > 0 {
			if !fn(line) {
				return nil
			}
		}
		line, tooLong = line[:0], false
	}
}

// maxLabel bounds a name or title read from a transcript (runes).
const maxLabel = 200

// cleanLabel makes a name or title read from a transcript safe to show:
// one line, no control characters, at most maxLabel runes.
func cleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxLabel {
		s = string([]rune(s)[:maxLabel-1]) + "…"
	}
	return s
}

// shortTitle makes a one-line title of a prompt.
func shortTitle(s string) string {
	s = cleanLabel(s)
	if utf8.RuneCountInString(s) <= maxTitle {
		return s
	}
	return string([]rune(s)[:maxTitle-1]) + "…"
}

// parseTime reads an RFC 3339 timestamp; zero when it is not one.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// readGroup reads the files of one session and merges them: one session
// however many rollouts it has. ok is false for what is not listed (no
// id, a Codex thread a sub-agent started).
func readGroup(ctx context.Context, tool string, g group) (s Session, ok bool, err error) {
	for _, f := range g.files {
		part, user, err := readFile(ctx, tool, f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Session{}, false, fmt.Errorf("read %s session %s: %w", tool, f.path, err)
		}
		if !user || !ValidID(part.ID) {
			return Session{}, false, nil
		}
		if s.ID == "" {
			s = part
			s.Paths = nil
		}
		if part.Name != "" {
			s.Name = part.Name // the newest name wins
		}
		if s.Title == "" {
			s.Title = part.Title
		}
		if s.Folder == "" {
			s.Folder = part.Folder
		}
		if part.LastActive.After(s.LastActive) {
			s.LastActive = part.LastActive
		}
		s.Path = part.Path
		s.Paths = append(s.Paths, part.Path)
	}
	if len(s.Paths) < 2 {
		s.Paths = nil
	}
	return s, s.ID != "", nil
}
