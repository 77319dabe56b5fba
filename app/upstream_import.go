package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/app/termsafe"
	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// ImportUpstream imports the upstream relay's relay.db at from into the
// database at to (the same path imports in place), with the harnesses this
// build knows; operator is the operator's slug (empty: relay.DefaultOperatorSlug).
func ImportUpstream(from, to, operator string) (store.ImportResult, error) {
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
