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
		h    app.Harness
		want string
	}{
		{app.Harness{Found: true, Tested: harness.VersionTested, TestedRange: "2.1.197–2.1.332"}, "yes (2.1.197–2.1.332)"},
		{app.Harness{Found: true, Tested: harness.VersionNewer, TestedRange: "2.1.197–2.1.332"}, "no, newer (tested 2.1.197–2.1.332)"},
		{app.Harness{Found: true, Tested: harness.VersionOlder, TestedRange: "0.61.0"}, "no, older (tested 0.61.0)"},
		{app.Harness{Found: true, TestedRange: "0.171.0"}, "? (tested 0.171.0)"},
		{app.Harness{Found: false, TestedRange: "0.171.0"}, "-"},
		{app.Harness{Found: true}, "-"},
	} {
		if got := testedText(tc.h); got != tc.want {
			t.Errorf("testedText(%+v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}
