package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Recorder limits.
const (
	// MaxActivityEntries is how many steps one run records before its end
	// (the last of them says that later steps are not shown).
	MaxActivityEntries = 1500
	maxTextRunes       = 2000
	maxDetailRunes     = 4000
	// mergeOutputRunes bounds consecutive output lines merged into one step;
	// it equals the text clip, so merging never loses a line.
	mergeOutputRunes = maxTextRunes
	// redactWindow is how much of the run's last stored output line(s) a
	// new output line is checked against for a secret split across them.
	redactWindow = 1024
)

// newRunID returns 8 hex characters that tell one run of a task from another.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b[:])
}

// newServerName returns a run's name for its own MCP server: RunServer, a
// dash and 12 random hex characters, which a working folder's settings
// written before the run cannot name.
func newServerName() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return runspec.RunServer + "-" + hex.EncodeToString(b[:])
}

// recorder writes a run's activity in batches: every flushEvery and at the
// end. It hides the run's secrets, also one a program printed across
// consecutive output lines (`xxd -p api-token`: the plain output presets
// give a step per line), clips long text, prefixes refs with the
// run id, merges consecutive output lines, replaces a pending step that has
// the same ref, and stops recording steps at MaxActivityEntries (the files
// and end entries are always written).
type recorder struct {
	relay   Relay
	taskID  string
	runID   string
	secrets []string
	now     func() time.Time

	mu      sync.Mutex
	pending []relay.ActivityEntry
	// tail is the end of the last output step written, while no other
	// step followed it: the next output line is checked against it.
	tail   string
	count  int  // steps accepted, the cap notice included
	capped bool // the cap notice was added
	closed bool
	err    error // the first write error

	stop chan struct{}
	done chan struct{}
}

func newRecorder(r Relay, taskID, runID string, now func() time.Time, flushEvery time.Duration, secrets ...string) *recorder {
	rec := &recorder{
		relay: r, taskID: taskID, runID: runID, secrets: secrets, now: now,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go rec.loop(flushEvery)
	return rec
}

func (r *recorder) loop(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.flush()
		}
	}
}

// clipRunes cuts s to n runes, the last being "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// clipMiddle keeps the head 40 % and the tail of s within n runes, with a
// marker telling how much was left out.
func clipMiddle(s string, n int) string {
	count := utf8.RuneCountInString(s)
	if count <= n {
		return s
	}
	r := []rune(s)
	head := n * 4 / 10
	tail := n - head
	return string(r[:head]) + fmt.Sprintf("\n… (%d characters not shown) …\n", count-head-tail) + string(r[count-tail:])
}

// clean makes e safe and small to store.
func (r *recorder) clean(e relay.ActivityEntry) relay.ActivityEntry {
	e.Text = clipRunes(strings.ToValidUTF8(relay.RedactSecrets(e.Text, r.secrets...), "\uFFFD"), maxTextRunes)
	e.Detail = clipMiddle(strings.ToValidUTF8(relay.RedactSecrets(e.Detail, r.secrets...), "\uFFFD"), maxDetailRunes)
	if e.Ref != "" {
		e.Ref = r.runID + ":" + clipRunes(relay.RedactSecrets(e.Ref, r.secrets...), 200)
	}
	if e.At == "" {
		e.At = relay.FormatTime(r.now())
	}
	return e
}

// add records steps (a parser's output, say).
func (r *recorder) add(entries ...relay.ActivityEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for _, e := range entries {
		e = r.clean(e)
		if e.Kind == relay.StepEnd || e.Kind == relay.StepFiles {
			r.pending = append(r.pending, e)
			continue
		}
		if e.Ref != "" {
			if i := r.pendingRef(e.Ref); i >= 0 {
				r.pending[i] = e
				continue
			}
		}
		if !plainOutput(e) {
			r.tail = ""
		} else if n := len(r.pending); n > 0 && plainOutput(r.pending[n-1]) {
			// A secret split across this line and the pending ones is
			// hidden in both.
			last := &r.pending[n-1]
			last.Text, e.Text = relay.RedactAcross(last.Text, e.Text, r.secrets...)
			if last.Status == e.Status && utf8.RuneCountInString(last.Text)+1+utf8.RuneCountInString(e.Text) <= mergeOutputRunes {
				last.Text += "\n" + e.Text
				continue
			}
		} else {
			// Across the output already written, this line's part.
			_, e.Text = relay.RedactAcross(r.tail, e.Text, r.secrets...)
		}
		if r.capped {
			continue
		}
		if r.count == MaxActivityEntries-1 {
			r.capped = true
			r.count++
			r.pending = append(r.pending, relay.ActivityEntry{
				At: relay.FormatTime(r.now()), Kind: relay.StepError, Status: relay.StepFailed,
				Text: fmt.Sprintf("This run produced more than %d steps; later steps are not shown.", MaxActivityEntries),
			})
			continue
		}
		r.count++
		r.pending = append(r.pending, e)
	}
}

// plainOutput reports whether e is a line of output (no ref, no detail),
// which consecutive ones are merged into.
func plainOutput(e relay.ActivityEntry) bool {
	return e.Kind == relay.StepOutput && e.Ref == "" && e.Detail == ""
}

func (r *recorder) pendingRef(ref string) int {
	for i := len(r.pending) - 1; i >= 0; i-- {
		if r.pending[i].Ref == ref {
			return i
		}
	}
	return -1
}

// flush writes the pending entries.
func (r *recorder) flush() {
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	if n := len(batch); n > 0 && plainOutput(batch[n-1]) {
		t := batch[n-1].Text
		r.tail = t[max(0, len(t)-redactWindow):]
	}
	r.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := r.relay.AppendActivity(ctx, r.taskID, batch); err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = fmt.Errorf("record activity of task %s: %w", r.taskID, err)
		}
		r.mu.Unlock()
	}
}

// close stops the timer, writes what is pending and returns the first
// write error. Later adds are dropped.
func (r *recorder) close() error {
	close(r.stop)
	<-r.done
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.err
}
