package relay

import (
	"testing"
	"time"
)

// checkFormatTime fails t unless FormatTime writes what time.Format writes
// with TimeLayout.
func checkFormatTime(t *testing.T, tm time.Time) {
	t.Helper()
	if got, want := FormatTime(tm), tm.UTC().Format(TimeLayout); got != want {
		t.Fatalf("FormatTime(%v) = %q, time.Format gives %q", tm, got, want)
	}
}

func TestFormatTime(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	for _, tm := range []time.Time{
		{}, time.Unix(0, 0), time.Unix(0, 999_999_999), time.Unix(1, 1_000_000),
		time.Date(2026, 12, 6, 8, 28, 16, 728_999_999, time.UTC),
		time.Date(2026, 1, 1, 0, 30, 0, 5_000_000, berlin), // the day before, in UTC
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
	} {
		checkFormatTime(t, tm)
	}
}

// FuzzFormatTime: any instant, in UTC or another zone, formats as
// time.Format does.
func FuzzFormatTime(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1_796_000_000), int64(123_456_789), 3600)
	f.Add(int64(-62_135_596_800), int64(1), -7200)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		checkFormatTime(t, time.Unix(sec, nsec).In(time.FixedZone("z", offset%100_000)))
	})
}
