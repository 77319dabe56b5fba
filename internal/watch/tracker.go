package watch

import (
	"context"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Tracker finds the files one run adds, changes and deletes in its
// folders: a snapshot before, a Watcher during, and a snapshot after. The
// zero value uses the default limits. It satisfies the worker's Tracker
// interface without either package importing the other.
type Tracker struct {
	Limits     Limits
	MaxTouched int
}

// Begin snapshots dirs and starts watching them. The returned end function
// stops watching, snapshots again and lists the changes (see Changes);
// reported are the files the agent CLI itself said it wrote, used only when
// the snapshots or the watcher could not see everything. A snapshot or
// watcher that fails only makes the result less certain, so Begin cannot
// fail.
func (t Tracker) Begin(ctx context.Context, dirs []string) (end func(ctx context.Context, reported []relay.ChangedFile) []relay.ChangedFile) {
	before, _ := Snapshot(ctx, dirs, t.Limits)          // an error leaves it incomplete
	w, werr := NewWatcher(dirs, t.Limits, t.MaxTouched) // without it, the snapshots alone count
	return func(ctx context.Context, reported []relay.ChangedFile) []relay.ChangedFile {
		var touched []Touch
		if werr == nil {
			touched, _ = w.Touched()
		}
		after, _ := Snapshot(ctx, dirs, t.Limits)
		// Complete snapshots are exact; otherwise every hint helps.
		if !before.Complete || !after.Complete {
			for _, f := range reported {
				op := OpWrite
				switch f.Change {
				case relay.FileAdded:
					op = OpCreate
				case relay.FileDeleted:
					op = OpRemove
				}
				touched = append(touched, Touch{Path: f.Path, Op: op})
			}
		}
		return Changes(before, after, touched)
	}
}
