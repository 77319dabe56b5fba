package worker

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/crosschat/crosschat-relay/internal/plantguard"
	"github.com/crosschat/crosschat-relay/internal/realdir"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// folders checks the worker's folders and allowed paths at every run, not
// only when the worker was saved (a run may have changed them since, and
// a worker saved by an older version was checked less): each leads where
// it led when the worker was saved (realdir.Moved against the worker's
// pins: a link a run put in place of a folder another run is given stops
// that run, naming the path), the working folder is a folder, and no
// working or extra folder is, holds or lies inside a protected folder (the
// relay's data folder). It returns the working folder and the extra
// folders that exist, as they resolve, and keeps where each allowed path
// leads (r.allowed): the run is started in them and given those very
// paths (runspec.SandboxRequest.Resolved), so neither it nor the sandbox
// follows a link put there between this check and its start. An extra
// folder that does not exist is left out, with a step in the run log.
//
// The pins are checked for a worker whose sandbox is on: an unsandboxed
// run reaches every file of the user's anyway, and a link the user moves
// on purpose (~/current to the next version) should not stop it.
func (r *runState) folders() (workdir string, extra []string, err error) {
	c := r.cfg
	pins := c.Pinned
	if !c.SandboxOn() {
		pins = nil
	}
	workdir, err = realdir.Moved("The working folder", c.Workdir, pins[c.Workdir])
	if err != nil {
		return "", nil, err
	}
	if fi, err := os.Stat(workdir); err != nil || !fi.IsDir() {
		return "", nil, fmt.Errorf("the working folder %s is not a folder on this computer (any more); choose another (workers set … --workdir)", c.Workdir)
	}
	if err := r.outsideProtected("working folder", c.Workdir, workdir); err != nil {
		return "", nil, err
	}
	for _, d := range c.ExtraDirs {
		real, err := realdir.Moved("The extra folder", d, pins[d])
		if err != nil {
			return "", nil, err
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			r.rec.add(relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
				Text: fmt.Sprintf("The extra folder %s does not exist, so this run can't use it.", d)})
			continue
		}
		if err := r.outsideProtected("extra folder", d, real); err != nil {
			return "", nil, err
		}
		extra = append(extra, real)
	}
	r.allowed = map[string]string{}
	for _, a := range c.AllowPaths {
		p, _ := relay.CutAllowPath(a)
		now, err := realdir.Moved("The allowed path", p, pins[p])
		if err != nil {
			return "", nil, err
		}
		r.allowed[p] = now
	}
	return workdir, extra, nil
}

// outsideProtected refuses a folder (named as configured, real as it
// resolves) that is, holds or lies inside one of the protected folders.
func (r *runState) outsideProtected(what, named, real string) error {
	for _, p := range r.w.m.opts.Protected {
		if p == "" {
			continue
		}
		rp := realdir.Pin(p)
		if realdir.Inside(real, []string{rp}) || realdir.Inside(rp, []string{real}) {
			return fmt.Errorf("the %s %s is, holds or lies inside the relay's data folder %s, where its database, admin token and the "+
				"other workers' CLI homes live, so this run was not started; choose a project folder (workers set … --workdir)", what, named, p)
		}
	}
	return nil
}

// A sandboxed run may write its folders, and so also what programs run
// code from there later, outside any sandbox (a repository's git
// configuration and hooks, the agent CLIs' project settings): Landlock
// cannot take those back from a folder it allows. So, unless the worker
// allows it (relay.WorkerConfig.AllowHookEdits), their state is taken
// before the run (guardFolders) and every change the run made to them is
// undone after it (undoPlanted), reported in the run log, the relay's log,
// the answer and the worker's last run.

// guard is the state of a run's writable folders before it.
type guard []*plantguard.Snapshot

// guardSet are the guards of the runs under way, oldest first. Runs of
// workers whose folders overlap may run at once: a run's snapshot is
// taken with them held, and inherits, where its folders overlap theirs,
// what they kept (plantguard.Snapshot.Inherit), so what one run planted is
// never taken for the folder's own by another and put back after it. A
// run's snapshots leave the set when they are restored (or the run ends
// without starting its CLI). Taking and restoring hold its lock, so no
// snapshot is taken while another run's restore is half done, and no two
// restores of a folder run at once.
type guardSet struct {
	mu     sync.Mutex
	active []*plantguard.Snapshot
}

// release takes g's snapshots out of the set (nothing when they are out
// already). gs.mu is held.
func (gs *guardSet) releaseLocked(g guard) {
	gs.active = slices.DeleteFunc(gs.active, func(s *plantguard.Snapshot) bool { return slices.Contains(g, s) })
}

// release is releaseLocked with the lock taken: for a run that ends
// before its CLI starts.
func (gs *guardSet) release(g guard) {
	if len(g) == 0 {
		return
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.releaseLocked(g)
}

// guardFolders takes the state of the folders the run may write (its
// working and extra folders, its read-write allowed paths), as they
// resolve, each once.
func (r *runState) guardFolders(workdir string, extra []string) (guard, error) {
	if !r.cfg.SandboxOn() || r.cfg.AllowHookEdits {
		return nil, nil
	}
	folders := append([]string{workdir}, extra...)
	for _, a := range r.cfg.AllowPaths {
		if p, rw := relay.CutAllowPath(a); rw {
			if real, ok := r.allowed[p]; ok && isDir(real) {
				folders = append(folders, real)
			}
		}
	}
	// Each once: a folder inside another is taken with it.
	var tops []string
	for _, f := range folders {
		if realdir.Inside(f, tops) {
			continue
		}
		tops = append(slices.DeleteFunc(tops, func(t string) bool { return realdir.Inside(t, []string{f}) }), f)
	}
	gs := &r.w.m.guarded
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var g guard
	for _, f := range tops {
		s, err := plantguard.Take(f)
		if errors.Is(err, plantguard.ErrTooLarge) {
			return nil, fmt.Errorf("%w, so this run was not started: the worker undoes a run's changes to them, and could not here. "+
				"Let its runs edit them (workers set … --allow-hook-edits, or in the worker form), or make them smaller", err)
		}
		if err != nil {
			return nil, fmt.Errorf("keep the git configuration and settings of %s for the run: %w", f, err)
		}
		for _, older := range gs.active {
			s.Inherit(older)
		}
		g = append(g, s)
	}
	gs.active = append(gs.active, g...)
	return g, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// undoPlanted undoes what the run changed of g's entries and reports it:
// a warning step in the run log, the relay's log, and the returned text
// for the answer ("" when the run changed none). undone lists each change.
func (r *runState) undoPlanted(g guard) (note string, undone []string, errs []error) {
	if len(g) == 0 {
		return "", nil, nil
	}
	gs := &r.w.m.guarded
	gs.mu.Lock()
	defer gs.mu.Unlock()
	defer gs.releaseLocked(g)
	partial := false
	for _, s := range g {
		changes, part, err := s.Restore()
		partial = partial || part
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range changes {
			undone = append(undone, c.String())
		}
	}
	if partial {
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Text: "The run's folders hold more entries than the worker checks for " +
			"git configuration, hooks and agent settings (200,000); those past them were not checked."})
	}
	if len(undone) == 0 && len(errs) == 0 {
		return "", nil, nil
	}
	note = "This run changed what the worker does not let runs change, which other programs run code from later (git " +
		"configuration and hooks, the agent CLIs' project settings), so the change was undone: " + strings.Join(undone, "; ") + "."
	if len(errs) > 0 {
		note += " Not all of it could be undone: " + errorText(errors.Join(errs...)) + "; check those folders before you use git or an agent CLI there."
	}
	note += " If its runs must edit them, let them (workers set … --allow-hook-edits, or in the worker form)."
	r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Text: note})
	r.w.m.log.Warn("worker: a run changed git configuration, hooks or agent settings; undone",
		"agent", r.cfg.AgentSlug, "task", r.task.ID, "undone", undone, "errors", errs)
	return note, undone, errs
}
