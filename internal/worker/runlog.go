package worker

import (
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Run outcomes in the relay's log (`crosschat-relay logs`): one line for
// each run that ends, and for each run a restart or a stop settles, so the
// log tells what became of every task a worker took, across a crash.
const (
	logCompleted   = "completed"   // the task's answer was reported
	logRecovered   = "recovered"   // the answer came from the session's transcript
	logBlocked     = "blocked"     // a blocker was reported (the CLI's error, a timeout, BLOCKED: …)
	logCancelled   = "cancelled"   // the sender cancelled it mid-run
	logInterrupted = "interrupted" // the relay stopped or restarted mid-run: requeued, or a turn not re-sent
	logRequeued    = "requeued"    // given back to the queue (a busy session)
)

// logRun writes one run's outcome: "worker run <outcome>" with the agent,
// the task and, when there is one, a line of why (the blocker's first
// line, the reason it was requeued).
func (m *Manager) logRun(outcome, agent, taskID, why string) {
	args := []any{"agent", agent, "task", taskID}
	if why = clipRunes(firstNonBlank(strings.ReplaceAll(why, "\r", "")), summaryLen); why != "" {
		args = append(args, "why", why)
	}
	m.log.Info("worker run "+outcome, args...)
}

// runLogOutcome is how a run ended, for the log: the task's state after
// it, and how the run got there.
func runLogOutcome(res runResult, status relay.TaskStatus) string {
	switch {
	case res.cancelled || status == relay.StatusCancelled:
		return logCancelled
	case res.stopped:
		return logInterrupted
	case res.requeue != "":
		return logRequeued
	case status == relay.StatusCompleted && res.recovered:
		return logRecovered
	case status == relay.StatusCompleted:
		return logCompleted
	case status == relay.StatusBlocked && strings.HasPrefix(res.out.message, InterruptedNotResent):
		return logInterrupted // a turn stopped before its session held an answer
	case status == relay.StatusBlocked:
		return logBlocked
	}
	return string(status) // the CLI gave it back or reported otherwise itself
}
