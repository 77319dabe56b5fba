package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/termsafe"
)

// followPoll is how often `logs -f` looks for new lines.
const followPoll = 250 * time.Millisecond

func logsCmd(args []string, stdout, stderr io.Writer) error {
	var follow bool
	var lines int
	var file string
	c, err := parseCommand("logs", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&follow, "f", false, "keep printing new lines as they are written (Ctrl+C to stop)")
		fs.IntVar(&lines, "n", 100, "print the last N lines first")
		fs.StringVar(&file, "log-file", "", "the log file; default crosschat-relay.log in the data folder")
	})
	if err != nil {
		return err
	}
	if lines < 0 {
		return fmt.Errorf("%w: -n %d: give a number of lines, 0 or more", errUsage, lines)
	}
	named := file != ""
	if !named {
		file = app.LogPath(c.cfg)
		if info, ok, err := app.ReadRunFile(c.cfg.DataDir); err == nil && ok && info.LogFile != "" {
			file = info.LogFile
		}
	}
	// The log holds what agents and relays sent; a terminal gets it clean.
	stdout = termsafe.NewWriter(stdout)
	off, err := tail(file, lines, stdout)
	switch {
	case err == nil, follow && errors.Is(err, os.ErrNotExist):
	case errors.Is(err, os.ErrNotExist) && named:
		return fmt.Errorf("logs: there is no file %s (--log-file)", file)
	case errors.Is(err, os.ErrNotExist):
		// A relay that never started on this data folder wrote no log.
		return fmt.Errorf("logs: no log yet: %s is written once the relay starts on the data folder %s (`crosschat-relay serve`, or the app); `logs -f` waits for it", file, c.cfg.DataDir)
	default:
		return fmt.Errorf("logs: %w", err)
	}
	if !follow {
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return followFile(ctx, file, off, stdout, followPoll)
}

// tail writes the last n lines of the file at path to w and returns the
// file's size (where following starts).
func tail(path string, n int, w io.Writer) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	// Read back from the end in blocks until n newlines are found.
	const block = 64 << 10
	var buf []byte
	pos := size
	for pos > 0 && bytes.Count(buf, []byte("\n")) <= n {
		step := min(int64(block), pos)
		pos -= step
		chunk := make([]byte, step)
		if _, err := f.ReadAt(chunk, pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		buf = append(chunk, buf...)
	}
	ls := bytes.SplitAfter(buf, []byte("\n"))
	if len(ls) > 0 && len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	for _, l := range ls {
		if _, err := w.Write(l); err != nil {
			return 0, err
		}
	}
	return size, nil
}

// followFile copies what is appended to path after offset to w until ctx
// ends. When the file is rotated (replaced or truncated) it starts again at
// the beginning of the new file. A missing file is waited for.
func followFile(ctx context.Context, path string, offset int64, w io.Writer, poll time.Duration) error {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("logs: %w", err)
			}
			if f != nil {
				if _, err := f.Seek(offset, io.SeekStart); err != nil {
					return fmt.Errorf("logs: %w", err)
				}
			}
		}
		if f != nil {
			n, err := io.Copy(w, bufio.NewReader(f))
			if err != nil {
				return fmt.Errorf("logs: %w", err)
			}
			offset += n
			cur, err1 := f.Stat()
			now, err2 := os.Stat(path)
			if err1 == nil && (err2 != nil || !os.SameFile(cur, now) || now.Size() < offset) {
				// Rotated: drain what was written before the rename, then switch.
				if _, err := io.Copy(w, f); err != nil {
					return fmt.Errorf("logs: %w", err)
				}
				f.Close()
				f, offset = nil, 0
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
