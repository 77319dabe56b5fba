package relay

import "time"

// TimeLayout is the wire and storage format of every timestamp: ISO-8601 UTC
// with milliseconds, fixed width, so strings compare in time order.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t in TimeLayout (UTC).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses a timestamp written by FormatTime.
func ParseTime(s string) (time.Time, error) { return time.Parse(TimeLayout, s) }

// OnlineWindow is how recently an agent must have been seen to count as online.
const OnlineWindow = 2 * time.Minute
