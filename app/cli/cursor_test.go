package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// The Claude Code plugin starts `channel` in every session, but Claude Code
// drops its events unless the session was started with development channels
// (its MCP log says "Channel notifications skipped"), and nothing in the MCP
// handshake tells the channel which. What the channel sent must therefore
// still reach the project's monitor (the Monitor tool the plugin's hook has
// the session start): a task sent while no session was open is printed by
// the next session's monitor, though that session's channel sent it first.
// (The channel used to move the project's one cursor past it, so the
// monitor never printed it and the task waited unseen.)
func TestChannelLeavesTheMonitorItsTasks(t *testing.T) {
	e := newEveryday(t)
	api, web, taskID := e.apiSendsWeb(t, "Rebase on main")

	// A session opens in web: its channel sends the task.
	t.Chdir(web)
	runChannel(t, func() string { return taskID })

	// The session's monitor still prints it.
	ctx, cancel := context.WithCancel(t.Context())
	var monOut, monErr testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- cli.MonitorRun(ctx, []string{"--format", "message"}, &monOut, &monErr) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("monitor: %v", err)
		}
	}()
	poll.Until(t, "the monitor's line for the task", 10*time.Second, func() bool {
		return strings.Contains(monOut.String(), `"taskId":"`+taskID+`"`)
	}, func() string { return fmt.Sprintf("stdout %q\nstderr %q", monOut.String(), monErr.String()) })

	// A second session's channel sends what is new, not the task again
	// (events come in order, so it would come before the new one).
	chOut := runChannel(t, func() string {
		t.Chdir(api)
		defer t.Chdir(web)
		out, errs, code := run(t, "send", "web", "Then tag the release")
		if code != 0 {
			t.Fatalf("send: exit %d, %q", code, errs)
		}
		return strings.TrimSpace(out)
	})
	if strings.Contains(chOut, taskID) {
		t.Fatalf("the second channel sent the first task again:\n%s", chOut)
	}
}

// runChannel runs `crosschat-relay channel` in the working folder as Claude
// Code starts it, with an MCP client's handshake on its standard input;
// then it calls then, waits for a channel notification naming the task id
// then returned, closes the channel's input and returns what it printed.
func runChannel(t *testing.T, then func() string) string {
	t.Helper()
	inR, inW, err := os.Pipe()
	noErr(t, err)
	old := os.Stdin
	os.Stdin = inR
	defer func() { os.Stdin = old; inR.Close() }()
	var out, errb testkit.Buffer
	done := make(chan int, 1)
	go func() { done <- cli.Command([]string{"channel"}, "test", &out, &errb) }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.332"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	} {
		_, err := inW.WriteString(line + "\n")
		noErr(t, err)
	}
	dump := func() string { return fmt.Sprintf("stdout %q\nstderr %q", out.String(), errb.String()) }
	poll.Until(t, "the channel to list its tools", 10*time.Second, func() bool {
		return strings.Contains(out.String(), `"id":1`)
	}, dump)
	want := then()
	// The first notification waits 2 s after tools/list (mcp.DefaultChannelSettle).
	poll.Until(t, "the channel's notification of "+want, 15*time.Second, func() bool {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "notifications/claude/channel") && strings.Contains(l, want) {
				return true
			}
		}
		return false
	}, dump)
	noErr(t, inW.Close())
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("channel: exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("channel did not end when its input closed; %s", dump())
	}
	return out.String()
}

// A project's first channel starts where its monitor is: a session that
// had only the monitor so far does not get the project's past as channel
// events when it first starts with the channel.
func TestChannelStartsWhereTheMonitorIs(t *testing.T) {
	e := newEveryday(t)
	web, api := e.folder(t, "web"), e.folder(t, "api")
	e.register(t, web)
	e.register(t, api)
	send := func(msg string) string {
		t.Helper()
		t.Chdir(api)
		defer t.Chdir(web)
		out, errs, code := run(t, "send", "web", msg)
		if code != 0 {
			t.Fatalf("send: exit %d, %q", code, errs)
		}
		return strings.TrimSpace(out)
	}
	old := send("Rebase on main")
	t.Chdir(web)
	ctx, cancel := context.WithCancel(t.Context())
	var monOut, monErr testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- cli.MonitorRun(ctx, nil, &monOut, &monErr) }()
	poll.Until(t, "the monitor's line for the task", 10*time.Second, func() bool {
		return strings.Contains(monOut.String(), old)
	}, func() string { return fmt.Sprintf("stdout %q\nstderr %q", monOut.String(), monErr.String()) })
	cancel()
	<-done

	chOut := runChannel(t, func() string { return send("Then tag the release") })
	if strings.Contains(chOut, old) {
		t.Fatalf("the first channel replayed a task the monitor had shown:\n%s", chOut)
	}
}

// A --state file is a cursor kept across restarts, from the first start:
// for a project a new file starts where the project's own does (at its
// registration, so a task queued before is printed), and the file is
// written as soon as the stream is ready, so an agent's monitor stopped
// before any event came resumes there and prints what arrived while it
// was down (it began from now again, and passed over it).
func TestMonitorStateFileFromTheFirstStart(t *testing.T) {
	e := newEveryday(t)
	_, web, queued := e.apiSendsWeb(t, "Queued before any monitor")
	t.Chdir(web)
	webState := filepath.Join(t.TempDir(), "web.state")
	mon := startMonitor(t, "--state", webState)
	mon.await(t, queued)
	mon.stop(t)

	rev, err := e.r.Services.Agents.Create(relay.CreateAgentInput{Slug: "bea", DisplayName: "Bea", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	t.Setenv("CROSSCHAT_TOKEN", rev.Token)
	beaState := filepath.Join(t.TempDir(), "bea.state")
	mon = startMonitor(t, "--state", beaState)
	mon.stop(t)
	if n, err := os.ReadFile(beaState); err != nil || strings.TrimSpace(string(n)) == "" {
		t.Fatalf("the state file after a ready stream and no event: %q %v", n, err)
	}
	task, err := e.r.Service().PostTask(t.Context(), relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "bea", Title: "sent while the monitor was down", Instructions: "x"})
	noErr(t, err)
	mon = startMonitor(t, "--state", beaState)
	mon.await(t, task.ID)
	mon.stop(t)
}

// A --state file written against another relay (the project registered
// again on a new one, or the data folder reset) holds a cursor past this
// relay's newest event: the monitor still prints the tasks queued here, says
// why it starts over, and the file follows this relay's journal after.
func TestMonitorStateFromAnotherRelay(t *testing.T) {
	e := newEveryday(t)
	_, web, queued := e.apiSendsWeb(t, "Queued on the new relay")
	t.Chdir(web)
	state := filepath.Join(t.TempDir(), "web.state")
	noErr(t, os.WriteFile(state, []byte("999\n"), 0o600))
	mon := startMonitor(t, "--state", state)
	mon.await(t, queued)
	if !strings.Contains(mon.errb.String(), "cursor 999 is past this relay's newest event") {
		t.Errorf("the monitor did not say why it starts over:\n%s", mon.dump())
	}
	mon.stop(t)
	n, err := readCursorFile(state)
	if err != nil || n >= 999 {
		t.Fatalf("the state file after: %d %v; want this relay's cursor", n, err)
	}
}

// readCursorFile reads a --state file's cursor.
func readCursorFile(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// runningMonitor is a `monitor` of the test, in the working folder.
type runningMonitor struct {
	out, errb *testkit.Buffer
	cancel    context.CancelFunc
	done      chan error
}

// startMonitor runs `monitor` with args until stop, once it has connected.
func startMonitor(t *testing.T, args ...string) *runningMonitor {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	m := &runningMonitor{out: &testkit.Buffer{}, errb: &testkit.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- cli.MonitorRun(ctx, args, m.out, m.errb) }()
	t.Cleanup(cancel)
	poll.Until(t, "the monitor to connect", 10*time.Second, func() bool { return strings.Contains(m.errb.String(), "connected after") }, m.dump)
	return m
}

func (m *runningMonitor) dump() string {
	return fmt.Sprintf("stdout %q\nstderr %q", m.out.String(), m.errb.String())
}

// await waits for the monitor's line naming id.
func (m *runningMonitor) await(t *testing.T, id string) {
	t.Helper()
	poll.Until(t, "the monitor's line for "+id, 10*time.Second, func() bool { return strings.Contains(m.out.String(), id) }, m.dump)
}

// stop ends the monitor and waits for it.
func (m *runningMonitor) stop(t *testing.T) {
	t.Helper()
	m.cancel()
	if err := <-m.done; err != nil {
		t.Fatalf("monitor: %v\n%s", err, m.dump())
	}
}
