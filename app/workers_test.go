package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure a worker set up from the command line runs a custom program for a
// task from the operator: the answer becomes the result, and the run's
// steps and the file it made are on the task.
func TestWorkerFromCLI(t *testing.T) {
	r := startRelay(t)
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir, "--json"}
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho made > made-by-run.txt\necho \"Built it in $(basename \"$PWD\")\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, append([]string{"agents", "add", "builder", "--name", "Builder", "--model", "sh", "--capability", "file-system"}, loc...)...); code != 0 {
		t.Fatalf("agents add: %s", errs)
	}
	out, errs, code := run(t, append([]string{"workers", "set", "builder", "--harness", "custom", "--command", script, "--workdir", work, "--timeout", "2m"}, loc...)...)
	var st relay.WorkerStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.AgentSlug != "builder" || !st.Exclusive || st.AllowedSenders[0] != "operator" {
		t.Fatalf("workers set: %d %s %s", code, out, errs)
	}
	task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "builder", Title: "Make a file", Instructions: "Write made-by-run.txt."})
	noErr(t, err)

	deadline := time.Now().Add(60 * time.Second)
	var d app.TaskDetail
	for {
		d, err = r.Services.Tasks.Get(task.ID)
		noErr(t, err)
		if d.Task.Status == relay.StatusCompleted || d.Task.Status == relay.StatusBlocked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %s", d.Task.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	last := d.Task.Reports[len(d.Task.Reports)-1]
	if d.Task.Status != relay.StatusCompleted || !strings.Contains(last.Result, "Built it in work") || d.Task.ClaimedVia != "" && d.Task.ClaimedVia != relay.ViaWorker {
		t.Fatalf("task %s, last report %+v", d.Task.Status, last)
	}
	steps, err := r.Services.Tasks.Activity(task.ID)
	noErr(t, err)
	var kinds []string
	var made string
	for _, s := range steps {
		kinds = append(kinds, s.Kind)
		for _, f := range s.Files {
			made = f.Path
		}
	}
	if len(steps) < 3 || steps[0].Kind != relay.StepStart || steps[len(steps)-1].Kind != relay.StepEnd || made != filepath.Join(work, "made-by-run.txt") {
		t.Fatalf("steps %v, file %q", kinds, made)
	}
	if _, err := r.Services.Tasks.FilePreview(task.ID, made); relay.ErrorCode(err) != relay.EInvalidRequest || !strings.Contains(err.Error(), "not a picture") {
		t.Fatalf("preview of a text file: %v", err)
	}
	if _, err := r.Services.Tasks.FilePreview(task.ID, script); relay.ErrorCode(err) != relay.EInvalidRequest {
		t.Fatalf("preview of a file the run did not make: %v", err)
	}

	// The worker records its last run after it reports the task.
	poll.Until(t, "the worker's last run", 10*time.Second, func() bool {
		st, _ := workerStatus(t, r, "builder")
		return st.LastRun != nil && st.LastRun.TaskID == task.ID
	})
	out, _, code = run(t, append([]string{"workers", "list"}, loc...)...)
	var ov app.WorkersOverview
	if code != 0 || json.Unmarshal([]byte(out), &ov) != nil || len(ov.Workers) != 1 || ov.Workers[0].LastRun == nil || ov.Workers[0].LastRun.Outcome != "completed" {
		t.Fatalf("workers list: %s", out)
	}
	out, _, code = run(t, append([]string{"harnesses"}, loc...)...)
	if code != 0 || !strings.Contains(out, `"id": "custom"`) || !strings.Contains(out, `"id": "claude-code"`) {
		t.Fatalf("harnesses: %s", out)
	}
	if out, _, code = run(t, append([]string{"workers", "pause"}, loc...)...); code != 0 || !strings.Contains(out, "true") {
		t.Fatalf("pause: %s", out)
	}
	if set, _ := r.Services.Settings.Get(); !set.WorkersPaused {
		t.Fatal("pause not stored")
	}
	if out, _, code = run(t, append([]string{"workers", "resume"}, loc...)...); code != 0 || !strings.Contains(out, "false") {
		t.Fatalf("resume: %s", out)
	}
	if _, errs, code = run(t, append([]string{"workers", "remove", "builder"}, loc...)...); code != 0 {
		t.Fatalf("remove: %s", errs)
	}
	if ov, _ := r.Services.Workers.List(); len(ov.Workers) != 0 {
		t.Fatalf("workers after remove: %+v", ov.Workers)
	}
	// Removed again, or never there: said, not reported as done.
	for _, slug := range []string{"builder", "nobody"} {
		if out, errs, code := run(t, append([]string{"workers", "remove", slug}, loc...)...); code != 1 || out != "" || !strings.Contains(errs, "“"+slug+"” has no worker.") {
			t.Fatalf("remove %s without a worker: exit %d, %q %q", slug, code, out, errs)
		}
	}
}

// Ensure a worker setup that cannot work is refused before anything is made.
func TestWorkerConnectRefusesBeforeCreating(t *testing.T) {
	r := startRelay(t)
	_, err := r.Services.Workers.Connect(app.ConnectInput{
		Harness: "custom", Slug: "half", DisplayName: "Half",
		Worker: &relay.WorkerConfig{Command: "/no/such/program", Workdir: t.TempDir(), AllowedSenders: []string{"operator"}, Enabled: true},
	})
	if relay.ErrorCode(err) != relay.EInvalidRequest || !strings.Contains(err.Error(), "not a program") {
		t.Fatalf("connect: %v", err)
	}
	agents, _ := r.Services.Agents.List()
	for _, a := range agents {
		if a.Slug == "half" {
			t.Fatal("a refused connect left an agent behind")
		}
	}
	dir := t.TempDir()
	res, err := r.Services.Workers.Connect(app.ConnectInput{
		Harness: "custom", Slug: "whole", DisplayName: "Whole", Role: "Runs scripts",
		Worker: &relay.WorkerConfig{Command: "/bin/sh", Args: []string{"{prompt_file}"}, PromptMode: relay.PromptFile, Workdir: dir, AllowedSenders: []string{"operator"}, Enabled: true},
	})
	noErr(t, err)
	if !strings.HasPrefix(res.Token, "cca_") || res.Connection.Configured || res.Worker == nil || !res.Agent.OwnerSet.DisplayName || res.Agent.Details != "Runs scripts" {
		t.Fatalf("connect result %+v", res)
	}
}
