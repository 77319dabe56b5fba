package relay

import "time"

// TimeLayout is the wire and storage format of every timestamp: ISO-8601 UTC
// with milliseconds, fixed width, so strings compare in time order.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t in TimeLayout (UTC). Every write stamps its rows
// with it, so the digits are put in place here rather than by interpreting
// the layout on each call; a year outside 0 to 9999, which the layout
// cannot hold at its fixed width, is left to time.Format.
func FormatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(TimeLayout)
	}
	hour, minute, sec := t.Clock()
	b := []byte("0000-00-00T00:00:00.000Z")
	digits(b[0:4], year)
	digits(b[5:7], int(month))
	digits(b[8:10], day)
	digits(b[11:13], hour)
	digits(b[14:16], minute)
	digits(b[17:19], sec)
	digits(b[20:23], t.Nanosecond()/int(time.Millisecond)) // truncated, as Format does
	return string(b)
}

// digits writes v in decimal into all of b, with leading zeros.
func digits(b []byte, v int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// ParseTime parses a timestamp written by FormatTime.
func ParseTime(s string) (time.Time, error) { return time.Parse(TimeLayout, s) }

// OnlineWindow is how recently an agent must have been seen to count as online.
const OnlineWindow = 2 * time.Minute
