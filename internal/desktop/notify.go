package desktop

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Notification is one OS notification about a task.
type Notification struct {
	Title string
	Body  string
	// TaskID is opened when the notification is clicked; "" opens the window.
	TaskID string
}

// Notifier shows OS notifications: org.freedesktop.Notifications on the
// D-Bus session bus (Linux), a toast (Windows), the notification centre
// (macOS).
type Notifier interface {
	Notify(n Notification) error
	Close() error
}

// ErrNoNotifications means the desktop has no notification service.
var ErrNoNotifications = errors.New("no notification service on this desktop")

// NewNotifier connects to the system's notification service. onClick runs
// with the notification's TaskID when the user clicks it (where the system
// reports clicks).
func NewNotifier(onClick func(taskID string)) (Notifier, error) {
	return newNotifier(onClick)
}

// clickMap remembers which task each shown notification is about.
type clickMap struct {
	mu  sync.Mutex
	ids map[uint32]string
}

func (c *clickMap) put(id uint32, task string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil || len(c.ids) > 256 {
		c.ids = map[uint32]string{}
	}
	c.ids[id] = task
}

func (c *clickMap) take(id uint32) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.ids[id]
	delete(c.ids, id)
	return t, ok
}

// markupText is s as a notification body that the server reads markup in
// shows it: its text, no tag of it taken as one.
func markupText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func notifyErr(err error) error { return fmt.Errorf("notify: %w", err) }
