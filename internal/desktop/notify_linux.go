package desktop

import (
	"slices"
	"sync"

	"github.com/godbus/dbus/v5"
)

const (
	notifyName  = "org.freedesktop.Notifications"
	notifyPath  = "/org/freedesktop/Notifications"
	notifyIface = "org.freedesktop.Notifications"
)

// dbusNotifier calls org.freedesktop.Notifications.Notify on the session
// bus, with a "default" action; ActionInvoked opens the task.
type dbusNotifier struct {
	conn *dbus.Conn
	// plain says the server takes no markup in a body: learnt once from
	// its capabilities; until then a body is escaped, as for one that does.
	plainMu sync.Mutex
	plain   *bool
	clicks  clickMap
	onClick func(string)
	sig     chan *dbus.Signal
}

func newNotifier(onClick func(string)) (Notifier, error) {
	// A private connection: systray uses the shared one and closes it on exit.
	conn, err := dbus.SessionBusPrivate()
	if err != nil {
		return nil, notifyErr(err)
	}
	if err := conn.Auth(nil); err != nil {
		conn.Close()
		return nil, notifyErr(err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, notifyErr(err)
	}
	n := &dbusNotifier{conn: conn, onClick: onClick, sig: make(chan *dbus.Signal, 16)}
	if err := conn.AddMatchSignal(dbus.WithMatchInterface(notifyIface), dbus.WithMatchMember("ActionInvoked")); err != nil {
		conn.Close()
		return nil, notifyErr(err)
	}
	conn.Signal(n.sig)
	go n.listen()
	return n, nil
}

func (n *dbusNotifier) listen() {
	for s := range n.sig {
		if s == nil || s.Name != notifyIface+".ActionInvoked" || len(s.Body) < 2 {
			continue
		}
		id, _ := s.Body[0].(uint32)
		if task, ok := n.clicks.take(id); ok && n.onClick != nil {
			n.onClick(task)
		}
	}
}

// Notify shows n; it fails when no notification service owns the name.
func (n *dbusNotifier) Notify(note Notification) error {
	hints := map[string]dbus.Variant{
		"desktop-entry": dbus.MakeVariant("crosschat-relay"),
		"category":      dbus.MakeVariant("im.received"),
	}
	if note.TaskID != "" {
		hints["x-crosschat-task"] = dbus.MakeVariant(note.TaskID)
	}
	body := note.Body
	if !n.plainBodies() {
		body = markupText(body)
	}
	var id uint32
	err := n.conn.Object(notifyName, notifyPath).Call(notifyIface+".Notify", 0,
		DisplayName, uint32(0), "crosschat-relay", note.Title, body,
		[]string{"default", "Open"}, hints, int32(-1)).Store(&id)
	if err != nil {
		return notifyErr(err)
	}
	n.clicks.put(id, note.TaskID)
	return nil
}

// plainBodies reports whether the server shows a body as it is: it does
// not list body-markup among its capabilities. Servers that do read tags
// (links, pictures) in it, so text from agents is escaped for them.
func (n *dbusNotifier) plainBodies() bool {
	n.plainMu.Lock()
	defer n.plainMu.Unlock()
	if n.plain == nil {
		var caps []string
		if err := n.conn.Object(notifyName, notifyPath).Call(notifyIface+".GetCapabilities", 0).Store(&caps); err != nil {
			return false
		}
		plain := !slices.Contains(caps, "body-markup")
		n.plain = &plain
	}
	return *n.plain
}

func (n *dbusNotifier) Close() error {
	n.conn.RemoveSignal(n.sig)
	close(n.sig)
	return n.conn.Close()
}
