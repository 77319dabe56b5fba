package app

import (
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Insights answers the dashboard's charts: the relay's traffic over the
// last day and week, and a task's whole conversation. Each method reads
// aggregates over a bounded window (internal/store/insights.go); the
// dashboard reads them again when tasks change, a few seconds apart at most.
type Insights struct {
	c   *core
	now func() time.Time
}

// The windows of the charts.
const (
	// throughputHours is the Activity page's throughput: hours up to now.
	throughputHours = 24
	// latencyDays is how far back the Activity page's latencies reach.
	latencyDays = 7
	// outcomeDays is the Agents page's sparkline: days up to today.
	outcomeDays = 7
)

// Activity returns the Activity page's charts for a viewer whose clock is
// tzOffsetMinutes east of UTC (JavaScript's -getTimezoneOffset()): tasks
// posted, completed and blocked in each of the last 24 hours (on the
// viewer's full hours, the current one last), each agent's time to claim
// and to finish over the tasks posted in the last 7 days, and each agent's
// open work now.
func (i *Insights) Activity(tzOffsetMinutes int) (relay.ActivityInsights, error) {
	svc, ctx, err := i.c.get()
	if err != nil {
		return relay.ActivityInsights{}, err
	}
	now := i.clock()
	hours, err := relay.AlignedWindow(now, tzOffsetMinutes, time.Hour, throughputHours)
	if err != nil {
		return relay.ActivityInsights{}, err
	}
	out := relay.ActivityInsights{At: relay.FormatTime(now)}
	if out.Throughput, err = svc.Throughput(ctx, hours); err != nil {
		return relay.ActivityInsights{}, err
	}
	since := now.Add(-latencyDays * 24 * time.Hour)
	out.LatencySince = relay.FormatTime(since)
	// The window ends past now's millisecond, the resolution of the
	// stored times: a task posted within it is in (it fell out of the
	// window when the charts were read in the same millisecond).
	if out.Latencies, err = svc.Latencies(ctx, since, now.Add(time.Millisecond)); err != nil {
		return relay.ActivityInsights{}, err
	}
	if out.OpenWork, err = svc.OpenWork(ctx); err != nil {
		return relay.ActivityInsights{}, err
	}
	return out, nil
}

// Agents returns, per agent, the tasks it completed and those it left
// blocked on each of the last 7 days (the viewer's days, today last; see
// Activity for tzOffsetMinutes).
func (i *Insights) Agents(tzOffsetMinutes int) ([]relay.AgentOutcomes, error) {
	svc, ctx, err := i.c.get()
	if err != nil {
		return nil, err
	}
	days, err := relay.AlignedWindow(i.clock(), tzOffsetMinutes, 24*time.Hour, outcomeDays)
	if err != nil {
		return nil, err
	}
	return svc.Outcomes(ctx, days)
}

// Conversation returns every task of the conversation taskID belongs to,
// oldest first, with their parent links: the task drawer's tree and graph.
func (i *Insights) Conversation(taskID string) (relay.Conversation, error) {
	svc, ctx, err := i.c.get()
	if err != nil {
		return relay.Conversation{}, err
	}
	return svc.Conversation(ctx, taskID)
}

func (i *Insights) clock() time.Time {
	if i.now != nil {
		return i.now()
	}
	return time.Now()
}
