package shell

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/termsafe"
	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Notification kinds, one per thing the operator is told about.
const (
	noteDone    = "done"    // a task the operator sent was completed
	noteBlocked = "blocked" // a task the operator sent is blocked
	noteReview  = "review"  // a task waits for the operator (sent to them)
	noteFailed  = "failed"  // a worker run failed
)

// note is one thing to notify about, before coalescing.
type note struct {
	kind   string
	taskID string
	title  string
	detail string
}

// noteDetector turns committed changes into notes: only transitions count,
// so a task republished with the same status is not notified twice.
type noteDetector struct {
	operator string
	status   map[string]relay.TaskStatus
	runs     map[string]bool
}

func newNoteDetector(operator string) *noteDetector {
	return &noteDetector{operator: operator, status: map[string]relay.TaskStatus{}, runs: map[string]bool{}}
}

// seed records a task's current status without notifying about it.
func (d *noteDetector) seed(t relay.TaskSummary) { d.status[t.ID] = t.Status }

func (d *noteDetector) detect(c relay.Change) []note {
	if len(d.status) > 10000 {
		d.status = map[string]relay.TaskStatus{}
	}
	if len(d.runs) > 10000 {
		d.runs = map[string]bool{}
	}
	switch c.Type {
	case relay.ChangeTask:
		t := c.Task
		if t == nil {
			return nil
		}
		prev, seen := d.status[t.ID]
		d.status[t.ID] = t.Status
		if seen && prev == t.Status {
			return nil
		}
		switch {
		case t.SenderSlug == d.operator && t.RecipientSlug != d.operator && t.Status == relay.StatusCompleted:
			return []note{{kind: noteDone, taskID: t.ID, title: t.Title, detail: t.RecipientSlug}}
		case t.SenderSlug == d.operator && t.RecipientSlug != d.operator && t.Status == relay.StatusBlocked:
			return []note{{kind: noteBlocked, taskID: t.ID, title: t.Title, detail: t.RecipientSlug}}
		case t.RecipientSlug == d.operator && t.SenderSlug != d.operator && t.Status == relay.StatusQueued:
			return []note{{kind: noteReview, taskID: t.ID, title: t.Title, detail: t.SenderSlug}}
		}
	case "worker":
		w := c.Worker
		if w == nil || w.LastRun == nil || w.LastRun.Outcome != "blocked" {
			return nil
		}
		key := w.AgentSlug + "\x00" + w.LastRun.TaskID + "\x00" + w.LastRun.FinishedAt
		if d.runs[key] {
			return nil
		}
		d.runs[key] = true
		return []note{{kind: noteFailed, taskID: w.LastRun.TaskID, title: w.LastRun.Title, detail: w.AgentSlug + ": " + w.LastRun.Summary}}
	}
	return nil
}

// coalesce turns a burst of notes into notifications: one per note when
// it is alone of its kind, else one summary ("5 tasks finished") that
// opens the window. A task both blocked and failed in one burst is told once.
func coalesce(notes []note) []desktop.Notification {
	byKind := map[string][]note{}
	var order []string
	blocked := map[string]bool{}
	for _, n := range notes {
		if n.kind == noteBlocked {
			blocked[n.taskID] = true
		}
	}
	for _, n := range notes {
		if n.kind == noteFailed && blocked[n.taskID] {
			continue
		}
		if _, ok := byKind[n.kind]; !ok {
			order = append(order, n.kind)
		}
		byKind[n.kind] = append(byKind[n.kind], n)
	}
	var out []desktop.Notification
	for _, k := range order {
		ns := byKind[k]
		if len(ns) == 1 {
			n := ns[0]
			out = append(out, desktop.Notification{Title: singleTitle(k), Body: noteText(n.title) + " (" + noteText(n.detail) + ")", TaskID: n.taskID})
			continue
		}
		var titles []string
		for i, n := range ns {
			if i == 3 {
				titles = append(titles, fmt.Sprintf("and %d more", len(ns)-3))
				break
			}
			titles = append(titles, noteText(n.title))
		}
		out = append(out, desktop.Notification{Title: manyTitle(k, len(ns)), Body: strings.Join(titles, "\n")})
	}
	return out
}

// noteMax bounds each text from data in a notification, in characters.
const noteMax = 160

// noteText is a text from data (a title, a name, a run's summary) as a
// notification shows it: one line, without control characters or direction
// overrides (an agent's title cannot reorder or hide what the operator
// reads), and at most noteMax characters.
func noteText(s string) string {
	if r := []rune(s); len(r) > noteMax {
		s = string(r[:noteMax-1]) + "…"
	}
	return termsafe.Line(s)
}

func singleTitle(kind string) string {
	switch kind {
	case noteDone:
		return "Task finished"
	case noteBlocked:
		return "Task blocked"
	case noteReview:
		return "A task waits for you"
	default:
		return "A worker run failed"
	}
}

func manyTitle(kind string, n int) string {
	switch kind {
	case noteDone:
		return fmt.Sprintf("%d tasks finished", n)
	case noteBlocked:
		return fmt.Sprintf("%d tasks blocked", n)
	case noteReview:
		return fmt.Sprintf("%d tasks wait for you", n)
	default:
		return fmt.Sprintf("%d worker runs failed", n)
	}
}

// desktopPrefs are the window app's own preferences (desktop.json in the
// data folder).
type desktopPrefs struct {
	// Notifications off when false; a missing file means on.
	Notifications bool `json:"notifications"`
}

const prefsFile = "desktop.json"

func loadPrefs(dataDir string) desktopPrefs {
	p := desktopPrefs{Notifications: true}
	b, err := os.ReadFile(filepath.Join(dataDir, prefsFile))
	if err == nil {
		_ = json.Unmarshal(b, &p) // a damaged file gives the defaults
	}
	return p
}

func (p desktopPrefs) save(dataDir string) error {
	return app.WriteJSONAtomic(filepath.Join(dataDir, prefsFile), p, "save preferences")
}

// focusJS makes the page report focus changes (injected at DOM ready).
const focusJS = `(function(){var r=function(){window.go&&window.go.app&&window.go.app.System.ReportFocus(document.hasFocus()).catch(function(){})};` +
	`window.addEventListener('focus',r);window.addEventListener('blur',r);document.addEventListener('visibilitychange',r);r();})()`
