package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// exitCode is an error that ends the CLI with a given code and no message
// (the verb has printed what it had to say).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// statusNotRunning is `status`'s exit code when no relay runs, as with
// `systemctl status`.
const statusNotRunning = exitCode(3)

// Status is what `crosschat-relay status --json` prints.
type Status struct {
	Running bool `json:"running"`
	app.RunInfo
	// Uptime in seconds.
	Uptime float64      `json:"uptimeSeconds,omitempty"`
	Stats  *relay.Stats `json:"stats,omitempty"`
	// Note explains a stale run file or missing counts.
	Note string `json:"note,omitempty"`
}

func statusCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("status", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	st, err := relayStatus(c)
	if err != nil {
		return err
	}
	if c.json {
		if err := c.printJSON(st); err != nil {
			return err
		}
	} else {
		printStatus(stdout, st, c.cfg.DataDir)
	}
	if !st.Running {
		return statusNotRunning
	}
	return nil
}

// relayStatus finds the relay of c's data folder: its run file names the
// address, and /health there says whether it is up. A relay that answers
// at an address the command line named, with no run file of this folder
// there, is said in the note: it is another data folder's.
func relayStatus(c *command) (Status, error) {
	info, ok, err := app.ReadRunFile(c.cfg.DataDir)
	if err != nil {
		return Status{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := Status{RunInfo: info}
	switch {
	case !ok:
		st = Status{RunInfo: app.RunInfo{DataDir: c.cfg.DataDir}}
	case !healthy(ctx, info.URL):
		st.Note = fmt.Sprintf("stale run file of pid %d: nothing answers at %s", info.PID, info.URL)
	}
	down := !ok || st.Note != ""
	if u := "http://" + c.addr(); down && c.named && u != info.URL && healthy(ctx, u) {
		// The data folder names the relay; the address only finds it.
		st.Note = strings.TrimPrefix(st.Note+"; ", "; ") + fmt.Sprintf("a relay of another data folder answers at %s: name its folder with --data-dir", u)
	}
	if down {
		return st, nil
	}
	st.Running = true
	if t, err := relay.ParseTime(info.StartedAt); err == nil {
		st.Uptime = time.Since(t).Round(time.Second).Seconds()
	}
	token, err := c.cfg.AdminToken(false)
	if err != nil {
		st.Note = "no counts: " + err.Error()
		return st, nil
	}
	var stats relay.Stats
	if err := client.New(info.URL, token).Call(ctx, "Overview", "Stats", &stats); err != nil {
		st.Note = "no counts: " + err.Error()
		return st, nil
	}
	st.Stats = &stats
	return st, nil
}

// healthy reports whether a relay answers /health at base.
func healthy(ctx context.Context, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func printStatus(w io.Writer, st Status, dataDir string) {
	if !st.Running {
		fmt.Fprintln(w, "Crosschat Relay is not running on this data folder.")
		fmt.Fprintf(w, "  Data     %s\n", termSafe(dataDir))
		if st.Note != "" {
			fmt.Fprintf(w, "  Note     %s\n", termSafe(st.Note))
		}
		return
	}
	fmt.Fprintf(w, "Crosschat Relay is running (%s).\n", termSafe(st.Mode))
	fmt.Fprintf(w, "  PID      %d\n", st.PID)
	fmt.Fprintf(w, "  Version  %s\n", termSafe(st.Version))
	fmt.Fprintf(w, "  Uptime   %s (since %s)\n", time.Duration(st.Uptime)*time.Second, termSafe(st.StartedAt))
	fmt.Fprintf(w, "  Address  %s/ (MCP %s/mcp)\n", termSafe(st.URL), termSafe(st.URL))
	fmt.Fprintf(w, "  Data     %s\n", termSafe(st.DataDir))
	if st.LogFile != "" {
		fmt.Fprintf(w, "  Log      %s\n", termSafe(st.LogFile))
	}
	if s := st.Stats; s != nil {
		fmt.Fprintf(w, "  Tasks    %d queued, %d claimed, %d blocked, %d completed today\n", s.Tasks.Queued, s.Tasks.Claimed, s.Tasks.Blocked, s.DoneToday)
		fmt.Fprintf(w, "  Agents   %d online of %d\n", s.Agents.Online, s.Agents.Total)
	}
	if st.Note != "" {
		fmt.Fprintf(w, "  Note     %s\n", termSafe(st.Note))
	}
}

// errRelayRunning refuses work on the data folder of a running relay.
var errRelayRunning = errors.New("the relay is running on this data folder; stop it first (`crosschat-relay quit`)")
