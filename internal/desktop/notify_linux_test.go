package desktop

import (
	"os"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
)

// markupServer is an org.freedesktop.Notifications service that lists
// caps and records the bodies it is sent.
type markupServer struct {
	caps   []string
	mu     sync.Mutex
	bodies []string
}

func (s *markupServer) Notify(_ string, _ uint32, _, _, body string, _ []string, _ map[string]dbus.Variant, _ int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, body)
	return uint32(len(s.bodies)), nil
}

func (s *markupServer) GetCapabilities() ([]string, *dbus.Error) { return s.caps, nil }

// Ensure a body reaches a notification server that reads markup in it as
// text: an agent's title with a link or a picture shows as written, not as
// a link to click or a picture fetched. A server without markup gets it as
// it is.
func TestNotifyBodyMarkup(t *testing.T) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("CROSSCHAT_REQUIRE_DBUS") != "" {
			t.Fatal("no D-Bus session bus; run under dbus-run-session")
		}
		t.Skip("no D-Bus session bus (make test-desktop runs this under dbus-run-session)")
	}
	const title = `Approve <a href="https://evil.example/">deploy</a> <img src="https://evil.example/x.png"/> & go`
	for _, tc := range []struct {
		caps []string
		want string
	}{
		{[]string{"actions", "body", "body-markup", "body-hyperlinks"}, `Approve &lt;a href="https://evil.example/"&gt;deploy&lt;/a&gt; &lt;img src="https://evil.example/x.png"/&gt; &amp; go`},
		{[]string{"actions", "body"}, title},
	} {
		conn, err := dbus.SessionBusPrivate()
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Auth(nil); err != nil {
			t.Fatal(err)
		}
		if err := conn.Hello(); err != nil {
			t.Fatal(err)
		}
		srv := &markupServer{caps: tc.caps}
		if err := conn.Export(srv, notifyPath, notifyIface); err != nil {
			t.Fatal(err)
		}
		if reply, err := conn.RequestName(notifyName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			t.Fatalf("own %s: %v %v", notifyName, reply, err)
		}
		n, err := NewNotifier(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Notify(Notification{Title: "A task waits for you", Body: title, TaskID: "t"}); err != nil {
			t.Fatal(err)
		}
		n.Close()
		conn.Close()
		if len(srv.bodies) != 1 || srv.bodies[0] != tc.want {
			t.Errorf("caps %v: bodies %q; want %q", tc.caps, srv.bodies, tc.want)
		}
	}
}
