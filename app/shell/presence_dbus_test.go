package shell

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// needSessionBus skips without a D-Bus session bus, except where the
// caller promised one (`make test-desktop` runs under dbus-run-session).
func needSessionBus(t *testing.T) {
	t.Helper()
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return
	}
	if os.Getenv("CROSSCHAT_REQUIRE_DBUS") != "" {
		t.Fatal("no D-Bus session bus; run under dbus-run-session")
	}
	t.Skip("no D-Bus session bus (make test-desktop runs this under dbus-run-session)")
}

// fakeNotifications is a small org.freedesktop.Notifications service: it
// records Notify calls and can "click" one.
type fakeNotifications struct {
	mu    sync.Mutex
	calls []notifyCall
	next  uint32
}

type notifyCall struct {
	ID              uint32
	App, Summary    string
	Body            string
	Actions         []string
	Hints           map[string]string
	ExpireTimeoutMs int32
	ReplacesID      uint32
	AppIcon         string
}

func (f *fakeNotifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	h := map[string]string{}
	for k, v := range hints {
		h[k] = v.String()
	}
	f.calls = append(f.calls, notifyCall{ID: f.next, App: app, Summary: summary, Body: body, Actions: actions, Hints: h, ExpireTimeoutMs: timeout, ReplacesID: replaces, AppIcon: icon})
	return f.next, nil
}

func (f *fakeNotifications) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"actions", "body"}, nil
}

func (f *fakeNotifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "fake", "crosschat-test", "1", "1.2", nil
}

func (f *fakeNotifications) snapshot() []notifyCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]notifyCall(nil), f.calls...)
}

// serveFakeNotifications owns org.freedesktop.Notifications on the session bus.
func serveFakeNotifications(t *testing.T) (*fakeNotifications, *dbus.Conn) {
	t.Helper()
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
	t.Cleanup(func() { conn.Close() })
	f := &fakeNotifications{}
	if err := conn.Export(f, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v %v", reply, err)
	}
	return f, conn
}

// menuItem is one dbusmenu entry.
type menuItem struct {
	ID      int32
	Label   string
	Visible bool
	Enabled bool
	Toggle  int32
	Kids    []menuItem
}

// readMenu reads the tray's menu the way a panel does (GetLayout).
func readMenu(t *testing.T, conn *dbus.Conn, name string) menuItem {
	t.Helper()
	var rev uint32
	var root struct {
		ID    int32
		Props map[string]dbus.Variant
		Kids  []dbus.Variant
	}
	err := conn.Object(name, "/StatusNotifierItem/menu").Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &root)
	if err != nil {
		t.Fatalf("GetLayout: %v", err)
	}
	return toMenuItem(root.ID, root.Props, root.Kids)
}

func toMenuItem(id int32, props map[string]dbus.Variant, kids []dbus.Variant) menuItem {
	m := menuItem{ID: id, Visible: true, Enabled: true}
	if v, ok := props["label"]; ok {
		m.Label, _ = v.Value().(string)
	}
	if v, ok := props["visible"]; ok {
		m.Visible, _ = v.Value().(bool)
	}
	if v, ok := props["enabled"]; ok {
		m.Enabled, _ = v.Value().(bool)
	}
	if v, ok := props["toggle-state"]; ok {
		m.Toggle, _ = v.Value().(int32)
	}
	for _, k := range kids {
		vals, ok := k.Value().([]any)
		if !ok || len(vals) != 3 {
			continue
		}
		cid, _ := vals[0].(int32)
		cp, _ := vals[1].(map[string]dbus.Variant)
		ck, _ := vals[2].([]dbus.Variant)
		m.Kids = append(m.Kids, toMenuItem(cid, cp, ck))
	}
	return m
}

func (m menuItem) find(label string) (menuItem, bool) {
	for _, k := range m.Kids {
		if k.Label == label {
			return k, true
		}
	}
	return menuItem{}, false
}

// Ensure, on a real (private) D-Bus session bus, that the tray owns a
// StatusNotifierItem name and exports its menu; that a task the operator
// posted and an agent completed over MCP produces one Notify call naming
// it, whose click opens that task; that the tasks needing attention are
// listed; and that the menu's Open and Quit items reach the app.
func TestPresenceOverDBus(t *testing.T) {
	needSessionBus(t)
	fake, busConn := serveFakeNotifications(t)
	r := apptest.Relay(t)
	icon, err := os.ReadFile("../../build/linux/icons/32.png")
	if err != nil {
		t.Fatal(err)
	}
	shown, quit, opened := make(chan struct{}, 4), make(chan struct{}, 4), make(chan string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	p := startPresence(ctx, r.Service(), r.Services, r.Config().DataDir, icon, slog.New(slog.DiscardHandler), presenceHooks{
		show:     func() { shown <- struct{}{} },
		quit:     func() { quit <- struct{}{} },
		openTask: func(id string) { opened <- id },
	})
	t.Cleanup(func() { cancel(); p.stop() })
	if p.tray == nil || p.notifier == nil {
		t.Fatalf("tray %v, notifier %v: both must start on a session bus", p.tray, p.notifier)
	}

	// The StatusNotifierItem name and its menu.
	sni := "org.kde.StatusNotifierItem-" + strconv.Itoa(os.Getpid()) + "-1"
	poll.Until(t, "the tray owns "+sni, 20*time.Second, func() bool {
		var has bool
		return busConn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, sni).Store(&has) == nil && has
	})
	// The items come first; the attention header is titled by the first
	// refresh of the attention list, a moment later, so wait for all.
	var menu menuItem
	wantItems := []string{desktop.TrayOpenTitle, desktop.TrayPauseTitle, desktop.TrayStartAtLoginTitle, desktop.TrayNotificationsTitle, desktop.TrayDataFolderTitle, desktop.TrayQuitTitle, "Nothing needs attention"}
	missing := func() []string {
		var out []string
		for _, want := range wantItems {
			if _, ok := menu.find(want); !ok {
				out = append(out, want)
			}
		}
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		menu = readMenu(t, busConn, sni)
		if len(missing()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("menu lacks %q: %+v", missing(), menu)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var tip struct {
		Icon  string
		Image []struct {
			W, H int32
			Data []byte
		}
		Title, Text string
	}
	if err := busConn.Object(sni, "/StatusNotifierItem").Call("org.freedesktop.DBus.Properties.Get", 0, "org.kde.StatusNotifierItem", "ToolTip").Store(&tip); err != nil {
		t.Errorf("ToolTip: %v", err)
	}
	// A click on the icon opens the window (Activate); the menu is for a
	// right click. With ItemIsMenu true a tray host shows the menu instead.
	var isMenu bool
	if err := busConn.Object(sni, "/StatusNotifierItem").Call("org.freedesktop.DBus.Properties.Get", 0, "org.kde.StatusNotifierItem", "ItemIsMenu").Store(&isMenu); err != nil || isMenu {
		t.Errorf("ItemIsMenu = %v, %v; want false", isMenu, err)
	}

	// A task the operator posts, completed by the agent over MCP.
	rev, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "tray-bot", DisplayName: "Tray Bot", ModelSlug: "m", Capabilities: []string{"text-output"}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "tray-bot", Title: "Paint the tray icon", Instructions: "Amber dot."})
	if err != nil {
		t.Fatal(err)
	}
	agent := mcpClient(t, "http://"+r.Addr().String()+"/mcp", rev.Token)
	mcpCall(t, agent, "claim_next_task", map[string]any{})
	mcpCall(t, agent, "report_task", map[string]any{"taskId": task.ID, "kind": "completed", "message": "Painted.", "result": "amber"})
	poll.Until(t, "a Notify call", 20*time.Second, func() bool { return len(fake.snapshot()) > 0 })
	call := fake.snapshot()[0]
	if call.Summary != "Task finished" || !strings.Contains(call.Body, "Paint the tray icon") || call.App != desktop.DisplayName || len(call.Actions) < 2 || call.Actions[0] != "default" {
		t.Fatalf("Notify %+v", call)
	}
	writeShot(t, "notification.json", call)
	// Clicking it opens that task.
	if err := busConn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", call.ID, "default"); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-opened:
		if id != task.ID {
			t.Fatalf("clicking opened %q, want %q", id, task.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("clicking the notification opened nothing")
	}

	// A blocked task the operator sent is listed under "needs attention".
	blocked, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "tray-bot", Title: "Choose the blue", Instructions: "Which one?"})
	if err != nil {
		t.Fatal(err)
	}
	mcpCall(t, agent, "claim_next_task", map[string]any{})
	mcpCall(t, agent, "report_task", map[string]any{"taskId": blocked.ID, "kind": "blocked", "message": "Which blue?"})
	poll.Until(t, "the blocked task in the menu", 20*time.Second, func() bool {
		menu = readMenu(t, busConn, sni)
		it, ok := menu.find("Choose the blue")
		return ok && it.Visible
	})
	writeShot(t, "tray-menu.json", menu)
	poll.Until(t, "a Notify call for the blocked task", 20*time.Second, func() bool {
		for _, c := range fake.snapshot() {
			if c.Summary == "Task blocked" {
				return true
			}
		}
		return false
	})

	// Open and Quit, clicked over D-Bus as a panel does.
	for _, c := range []struct {
		label string
		ch    chan struct{}
	}{{desktop.TrayOpenTitle, shown}, {desktop.TrayQuitTitle, quit}} {
		it, _ := menu.find(c.label)
		if err := busConn.Object(sni, "/StatusNotifierItem/menu").Call("com.canonical.dbusmenu.Event", 0, it.ID, "clicked", dbus.MakeVariant(""), uint32(0)).Err; err != nil {
			t.Fatalf("click %s: %v", c.label, err)
		}
		select {
		case <-c.ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("clicking %s did nothing", c.label)
		}
	}
}

// writeShot saves a D-Bus dump for the closing note when CROSSCHAT_SHOTS names a folder.
func writeShot(t *testing.T, name string, v any) {
	dir := os.Getenv("CROSSCHAT_SHOTS")
	if dir == "" {
		return
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(dir+"/"+name, b, 0o644); err != nil {
		t.Logf("shot %s: %v", name, err)
	}
}

func mcpClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	trans, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "tray-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mcpCall(t *testing.T, c *client.Client, tool string, args map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("%s: %+v %v", tool, res, err)
	}
}
