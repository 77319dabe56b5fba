package cli

import (
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/harness"
)

// Ensure the TESTED column says whether a found CLI's version is in the
// range the release was tested with.
func TestTestedText(t *testing.T) {
	h := func(found bool, tested, testedRange string) app.Harness {
		return app.Harness{Detected: harness.Detected{Tested: tested, TestedRange: testedRange}, Found: found}
	}
	for _, tc := range []struct {
		h    app.Harness
		want string
	}{
		{h(true, harness.VersionTested, "2.1.197–2.1.332"), "yes (2.1.197–2.1.332)"},
		{h(true, harness.VersionNewer, "2.1.197–2.1.332"), "no, newer (tested 2.1.197–2.1.332)"},
		{h(true, harness.VersionOlder, "0.61.0"), "no, older (tested 0.61.0)"},
		{h(true, "", "0.171.0"), "? (tested 0.171.0)"},
		{h(false, "", "0.171.0"), "- (tested 0.171.0)"},
		{h(true, "", ""), "-"},
	} {
		if got := testedText(tc.h); got != tc.want {
			t.Errorf("testedText(%+v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}
