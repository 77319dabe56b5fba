package worker

import (
	"fmt"
	"os"

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
