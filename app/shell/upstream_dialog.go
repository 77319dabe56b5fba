package shell

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// offerImport is the window's answer to a data folder that holds the
// upstream relay's relay.db: it asks, imports on yes, and reports whether
// the relay can now start. On no it says how to import later and leaves
// the file alone.
func offerImport(rt app.Runtime, dbPath, operator string, startErr error) (imported bool, err error) {
	var ue *store.UpstreamError
	if !errors.As(startErr, &ue) {
		return false, startErr
	}
	msg := fmt.Sprintf("%s was written by the upstream Crosschat Relay (its schema version %d).\n\n"+
		"Import it? Agents, tasks, reports, the journal, invites, settings and workers come along, but no token: "+
		"each agent gets a new one from you, and open invites arrive revoked. "+
		"The original file is kept unchanged beside a backup copy.", ue.Path, ue.SchemaVersion)
	if !rt.Ask("Import from the upstream Crosschat Relay?", msg) {
		return false, fmt.Errorf("not imported; the file was left as it was. Import later with `crosschat-relay import-upstream`")
	}
	res, err := app.ImportUpstream(dbPath, dbPath, operator)
	if err != nil {
		return false, err
	}
	msg = fmt.Sprintf("Imported %d agents, %d tasks and %d journal events.\nThe original: %s\nA backup copy: %s",
		res.Counts["agents"], res.Counts["tasks"], res.Counts["events"], res.Kept, res.Backup)
	msg += "\n\n" + strings.TrimSpace(app.ImportedCredentialsText(res))
	if tasks := app.ImportedTasksText(res); tasks != "" {
		msg += "\n\n" + strings.TrimSpace(tasks)
	}
	if len(res.Workers) > 0 {
		msg += "\n\n" + strings.TrimSpace(app.ImportedWorkersText(res.Workers))
	}
	rt.Info("Imported", msg)
	return true, nil
}
