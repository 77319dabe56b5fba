package app

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/app/termsafe"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// ImportUpstream imports the upstream relay's relay.db at from into the
// database at to (the same path imports in place), with the harnesses this
// build knows; operator is the operator's slug (empty: relay.DefaultOperatorSlug).
// It holds the lock of to's folder as a relay does, so no relay starts on
// the database while it is rewritten (and it fails while one serves it).
func ImportUpstream(from, to, operator string) (store.ImportResult, error) {
	dir := filepath.Dir(to)
	if err := (config.Config{DataDir: dir}).EnsureDataDir(); err != nil {
		return store.ImportResult{}, fmt.Errorf("import: %w", err)
	}
	lock, err := lockDataDir(dir)
	if err != nil {
		return store.ImportResult{}, err
	}
	defer lock.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if operator == "" {
		operator = relay.DefaultOperatorSlug
	}
	return store.ImportUpstream(ctx, from, to, store.ImportOptions{
		Store: store.Options{OperatorSlug: operator},
		KnownHarness: func(id string) bool {
			if id == relay.HarnessCustom {
				return true
			}
			_, ok := harness.Lookup(id)
			return ok
		},
	})
}

// ImportedWorkersText lists the workers an import brought in, each
// disabled, with what it would run, and says how to enable them. The values
// come from the imported file, so they are made safe for a terminal.
func ImportedWorkersText(workers []store.ImportedWorker) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %d imported worker(s), each DISABLED until you enable it (Workers page) after checking what it runs:\n", len(workers))
	for _, iw := range workers {
		command := iw.Command
		if command == "" {
			command = "(the preset's own program, found when enabled)"
		}
		args := make([]string, len(iw.Args))
		for i, a := range iw.Args {
			args[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&b, "    %s\n      harness:   %s\n      command:   %s\n      arguments: %s\n      folder:    %s\n",
			termsafe.Line(iw.AgentSlug), termsafe.Line(iw.Harness), termsafe.Line(command), termsafe.Line(strings.Join(args, " ")), termsafe.Line(iw.Workdir))
		if len(iw.ExtraDirs) > 0 {
			fmt.Fprintf(&b, "      also:      %s\n", termsafe.Line(strings.Join(iw.ExtraDirs, "; ")))
		}
		if len(iw.AllowedSenders) > 0 {
			fmt.Fprintf(&b, "      tasks from: %s\n", termsafe.Line(strings.Join(iw.AllowedSenders, ", ")))
		}
	}
	return b.String()
}

// ImportedCredentialsText says what an import left out: it brings no
// credential, so the agents that had a token upstream are named with how
// to give each a new one, and the invites that could still enrol agents
// are named as revoked. The names come from the imported file, so they are
// made safe for a terminal.
func ImportedCredentialsText(res store.ImportResult) string {
	safe := func(list []string) string {
		names := make([]string, len(list))
		for i, s := range list {
			names[i] = termsafe.Line(s)
		}
		return strings.Join(names, ", ")
	}
	var b strings.Builder
	if len(res.RevokedTokens) > 0 {
		fmt.Fprintf(&b, "  No token came along (an imported file brings no credential). These agents had one and need a new\n"+
			"  token before they connect again: %s.\n"+
			"  Issue each one on the Agents page (Issue token) and set the agent up with it.\n", safe(res.RevokedTokens))
	}
	if len(res.RevokedInvites) > 0 {
		fmt.Fprintf(&b, "  These invites could still enrol agents and arrive revoked (create new ones): %s.\n", safe(res.RevokedInvites))
	}
	if b.Len() == 0 {
		b.WriteString("  No token or open invite came along (an imported file brings no credential).\n")
	}
	return b.String()
}

// ImportedTasksText says which agents the imported open tasks (queued or
// claimed upstream) are for: a worker enabled or set up for one of them
// runs them unattended, as the file says they were sent (in the operator's
// name too), so they are named to be read, and cancelled where the
// operator did not send them, before any worker starts. "" when none came.
// The names come from the imported file, so they are made safe for a
// terminal.
func ImportedTasksText(res store.ImportResult) string {
	if len(res.OpenTasks) == 0 {
		return ""
	}
	slugs := slices.Sorted(maps.Keys(res.OpenTasks))
	total, parts := 0, make([]string, len(slugs))
	for i, s := range slugs {
		total += res.OpenTasks[s]
		parts[i] = fmt.Sprintf("%s (%d)", termsafe.Line(s), res.OpenTasks[s])
	}
	return fmt.Sprintf("  %d open task(s) came along, for: %s.\n"+
		"  A worker you enable, or set up, for one of these agents runs them as the file says they were sent, in the\n"+
		"  operator's name too: read them on the Tasks page first, and cancel those you did not send.\n", total, strings.Join(parts, ", "))
}
