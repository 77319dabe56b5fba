package worker

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// readResult fills ex from the ended CLI: its exit code, its answer (the
// result file, else the parser's, else plain stdout), the error its stream
// reported in place of one, the tails of its output and the CLI session to
// resume.
func (r *runState) readResult(ex *execResult, cmd *exec.Cmd, waitErr error, spec runspec.Spec,
	parser runspec.StreamParser, plain bool, stdout, stderr *capture) {
	ex.exitCode = -1
	if cmd.ProcessState != nil {
		ex.exitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		ex.errs = append(ex.errs, fmt.Errorf("wait for %s: %w", filepath.Base(cmd.Path), waitErr))
	}
	if spec.ResultFile != "" {
		b, cut, err := readLimited(spec.ResultFile, maxResultFile)
		switch {
		case errors.Is(err, errNotRegular):
			// A link to a file of the user's (~/.ssh/id_ed25519) must not
			// become the answer: the run is blocked instead.
			ex.answer = fmt.Sprintf("BLOCKED: The worker did not read the run's result file %s: %v.", filepath.Base(spec.ResultFile), err)
		case err == nil:
			ex.answer = strings.TrimSpace(string(b))
			if cut && ex.answer != "" {
				ex.cut = fmt.Sprintf("[The result file passed %d MiB; the worker read only the start.]", maxResultFile>>20)
			}
		}
	}
	if ex.answer == "" {
		ex.answer = strings.TrimSpace(parser.Answer())
		if ex.answer != "" {
			ex.cut = stdout.cutMarker(false)
		}
	}
	if ex.answer == "" && plain {
		ex.answer = strings.TrimSpace(stdout.text())
		ex.cut = stdout.cutMarker(true)
	}
	ex.answer = strings.ToValidUTF8(ex.answer, "\uFFFD")
	ex.failure = strings.ToValidUTF8(parser.Failure(), "\uFFFD")
	ex.stdoutTail = stdout.tail()
	ex.stderrTail = stderr.tail()
	ex.sessionID = parser.SessionID()
}

// fileLine is a harness-reported file step line ("Added /x", "Edit y").
var fileLine = regexp.MustCompile(`^\s*(Added|Updated|Deleted|Write|Edit)\s+(.+?)\s*$`)

// noteFiles remembers the files the CLI says it wrote, for when a snapshot
// was incomplete.
func (r *runState) noteFiles(entries []relay.ActivityEntry) {
	for _, e := range entries {
		if e.Kind != relay.StepFile {
			continue
		}
		for _, line := range strings.Split(e.Text, "\n") {
			mt := fileLine.FindStringSubmatch(line)
			if mt == nil {
				continue
			}
			p := mt[2]
			if !filepath.IsAbs(p) {
				p = filepath.Join(r.cfg.Workdir, p)
			}
			change := relay.FileChanged
			switch mt[1] {
			case "Added":
				change = relay.FileAdded
			case "Deleted":
				change = relay.FileDeleted
			}
			r.mu.Lock()
			if len(r.reported) < maxReported {
				r.reported = append(r.reported, relay.ChangedFile{Path: filepath.Clean(p), Change: change})
			}
			r.mu.Unlock()
		}
	}
}

// filesText is the files entry's text: "Files: 2 added, 1 changed".
func filesText(files []relay.ChangedFile) string {
	n := map[string]int{}
	for _, f := range files {
		n[f.Change]++
	}
	var parts []string
	for _, c := range []string{relay.FileAdded, relay.FileChanged, relay.FileDeleted} {
		if n[c] > 0 {
			parts = append(parts, strconv.Itoa(n[c])+" "+c)
		}
	}
	return "Files: " + strings.Join(parts, ", ")
}

// errorText is an error's text for a person.
func errorText(err error) string {
	if relay.IsDomain(err) {
		return relay.ErrorMessage(err)
	}
	return err.Error()
}

// errNotRegular: a run's file is not a regular file with one link (a
// symbolic link, a hard link, a device, a pipe, a folder).
var errNotRegular = errors.New("it is not a regular file of the run's own (a symbolic link, a hard link to another file, a device or a pipe)")

// readLimited reads at most limit bytes of the regular file at path; cut
// tells whether there was more. A run's result file is the run's to make as
// large as it likes, so it is never read whole; and the run (sandboxed,
// while the relay is not) may have made it a link to a file it cannot read
// itself, so a symbolic link is not followed and anything but a regular
// file with a single link is refused (errNotRegular).
func readLimited(path string, limit int64) (b []byte, cut bool, err error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() || links(fi) > 1 {
		return nil, false, errNotRegular
	}
	b, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}
