package cli

import (
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/harness"
)

// Ensure the TESTED column says whether a found CLI's version is in the
// range the release was tested with.
func TestTestedText(t *testing.T) {
	for _, tc := range []struct {
		found               bool
		tested, testedRange string
		want                string
	}{
		{true, harness.VersionTested, "2.1.197–2.1.332", "yes (2.1.197–2.1.332)"},
		{true, harness.VersionNewer, "2.1.197–2.1.332", "no, newer (tested 2.1.197–2.1.332)"},
		{true, harness.VersionOlder, "0.61.0", "no, older (tested 0.61.0)"},
		{true, "", "0.171.0", "? (tested 0.171.0)"},
		{false, "", "0.171.0", "-"},
		{true, "", "", "-"},
	} {
		h := app.Harness{Detected: harness.Detected{Tested: tc.tested, TestedRange: tc.testedRange}, Found: tc.found}
		if got := testedText(h); got != tc.want {
			t.Errorf("testedText(%+v) = %q, want %q", h, got, tc.want)
		}
	}
}
