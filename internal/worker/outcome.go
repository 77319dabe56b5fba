package worker

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// outcome is what the worker reports for a run.
type outcome struct {
	kind    string // relay.ReportCompleted or relay.ReportBlocked
	message string
	result  string
}

// decideInput is how a CLI ended.
type decideInput struct {
	name           string
	timeoutMinutes int
	timedOut       bool
	exitCode       int
	answer         string
	// failure is the CLI's own error in place of an answer (not logged in,
	// a quota, an API error), from its stream or its session's transcript.
	failure  string
	stdout   string // tail of standard output
	stderr   string // tail of standard error
	authHint string
	cut      string // marker for what the worker left out of the answer
}

var blockedPrefix = regexp.MustCompile(`(?i)^\s*BLOCKED:`)

// decide turns a CLI's end into a report (docs/workers.md, "Workers: agents that run
// unattended"), the one rule for every run: fresh, into a bound session,
// into the session a task names, and a turn settled from its transcript
// after a restart. The CLI's own error in place of an answer (its stream
// or its transcript says so: not logged in, a quota, an API error) is a
// blocker with that cause, whatever the exit code and whatever text came
// with it; a timeout, a non-zero exit or an empty answer is a blocker with
// the last output; an answer starting with BLOCKED: is a blocker with the
// rest as its message; anything else completes the task with the answer
// as its result.
func decide(in decideInput) outcome {
	blocked := func(msg string) outcome {
		if in.authHint != "" {
			msg += "\n\n" + in.authHint
		}
		return outcome{kind: relay.ReportBlocked, message: msg}
	}
	switch {
	case strings.TrimSpace(in.failure) != "":
		return blocked(failureMessage(in.name, in.failure, in.exitCode))
	case in.timedOut:
		out := in.stdout
		if strings.TrimSpace(out) == "" {
			out = in.stderr
		}
		return outcome{kind: relay.ReportBlocked, message: fmt.Sprintf("The %s worker stopped this task after %s without finishing.",
			in.name, plural(in.timeoutMinutes, "minute")) + tail(out)}
	case in.exitCode != 0:
		out := in.stderr
		if strings.TrimSpace(out) == "" {
			out = in.answer
		}
		return blocked(fmt.Sprintf("%s exited with code %d before finishing.", capitalize(in.name), in.exitCode) + tail(out))
	case strings.TrimSpace(in.answer) == "":
		return blocked(fmt.Sprintf("%s finished but gave no answer.", capitalize(in.name)) + tail(in.stderr))
	case blockedPrefix.MatchString(in.answer):
		msg := strings.TrimSpace(blockedPrefix.ReplaceAllString(in.answer, ""))
		if msg == "" {
			msg = "The agent is blocked."
		}
		return outcome{kind: relay.ReportBlocked, message: clipRunes(msg, maxMsgRunes)}
	default:
		result := strings.TrimSpace(in.answer)
		if utf8.RuneCountInString(result) > maxMsgRunes {
			result = string([]rune(result)[:maxMsgRunes]) + "\n\n[Output shortened by the worker.]"
		}
		if in.cut != "" {
			result += "\n\n" + in.cut
		}
		return outcome{kind: relay.ReportCompleted, message: clipRunes(firstNonBlank(result), firstLine), result: result}
	}
}

// failureMessage is the blocker of a run that ended in the CLI's own error.
func failureMessage(name, failure string, exitCode int) string {
	msg := fmt.Sprintf("%s failed without answering this task: %s", capitalize(name), clipRunes(strings.TrimSpace(failure), tailRunes))
	if exitCode > 0 {
		msg += fmt.Sprintf(" (it exited with code %d)", exitCode)
	}
	return msg
}

// tail is "\n\nLast output:\n" and the end of text, or "" without text.
func tail(text string) string {
	t := strings.TrimSpace(text)
	if t == "" {
		return ""
	}
	if r := []rune(t); len(r) > tailRunes {
		t = strings.TrimSpace(string(r[len(r)-tailRunes:]))
	}
	return "\n\nLast output:\n" + t
}

// firstNonBlank is the first line of s with text in it.
func firstNonBlank(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// capture is an io.Writer for one output stream of the CLI: it calls line
// for each complete line (long lines in pieces), keeps the first maxCapture
// bytes for the answer and the last tailBytes for messages.
type capture struct {
	line func(string)
	// onCut, if set, is called once when the stream passes maxStream.
	onCut func()

	mu        sync.Mutex
	partial   []byte
	head      []byte
	last      []byte
	truncated bool
	seen      int  // bytes written
	cut       bool // past maxStream: lines are no longer handed on
}

func newCapture(line func(string)) *capture {
	return &capture{line: line}
}

// Write implements io.Writer.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	take := min(max(maxCapture-len(c.head), 0), len(p))
	c.head = append(c.head, p[:take]...)
	if take < len(p) {
		c.truncated = true
	}
	if len(p) > tailBytes {
		c.last = append(c.last[:0], p[len(p)-tailBytes:]...)
	} else {
		c.last = append(c.last, p...)
	}
	if len(c.last) > tailBytes {
		c.last = append(c.last[:0:0], c.last[len(c.last)-tailBytes:]...)
	}
	if c.cut {
		return len(p), nil
	}
	data := p
	if c.seen += len(p); c.seen > maxStream {
		data = p[:len(p)-(c.seen-maxStream)]
		c.cut = true
		defer func() {
			c.partial = c.partial[:0]
			if c.onCut != nil {
				c.onCut()
			}
		}()
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			c.partial = append(c.partial, data...)
			if len(c.partial) >= maxLine {
				c.emit(c.partial)
				c.partial = c.partial[:0]
			}
			break
		}
		c.partial = append(c.partial, data[:i]...)
		c.emit(c.partial)
		c.partial = c.partial[:0]
		data = data[i+1:]
	}
	return len(p), nil
}

func (c *capture) emit(b []byte) {
	s := strings.TrimRight(string(b), "\r")
	c.line(strings.ToValidUTF8(s, "\uFFFD"))
}

// flush hands over the last line if it had no newline.
func (c *capture) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 {
		c.emit(c.partial)
		c.partial = nil
	}
}

// text is the start of the stream (up to maxCapture bytes).
func (c *capture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(string(c.head), "\uFFFD")
}

// cutMarker says how the stream was shortened, or "" when it was not.
// With kept (the answer is the captured start of the stream), keeping only
// the first maxCapture bytes counts too; else only the cut at maxStream.
func (c *capture) cutMarker(kept bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.cut:
		return fmt.Sprintf("[The output passed %d MiB; the worker cut it there.]", maxStream>>20)
	case kept && c.truncated:
		return fmt.Sprintf("[The output passed %d MiB; the worker kept the first %d MiB.]", maxCapture>>20, maxCapture>>20)
	}
	return ""
}

// tail is the end of the stream.
func (c *capture) tail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(string(c.last), "\uFFFD")
}
