package shell

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSelfTestRoute: the route file gives the page a dashboard route, and
// nothing else: no file, another kind of text, a second line or an
// overlong route give none.
func TestSelfTestRoute(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, content string
		write         bool
		want          string
	}{
		{"no file", "", false, ""},
		{"a route", "#/activity?task=0190b4a4-0000-7000-8000-000000000001\n", true, "#/activity?task=0190b4a4-0000-7000-8000-000000000001"},
		{"the Activity page", "  #/activity  ", true, "#/activity"},
		{"not a route", "https://example.com/#/activity", true, ""},
		{"script", "javascript:alert(1)", true, ""},
		{"two lines", "#/activity\n#/tasks", true, ""},
		{"too long", "#/activity?x=" + strings.Repeat("a", maxSelfTestRoute), true, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "report.txt"+selfTestRouteSuffix+string(rune('a'+i)))
			if tc.write {
				if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := selfTestRoute(file); got != tc.want {
				t.Errorf("route %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSelfTestCall: the route reaches the page's hook as one JSON string,
// whatever it holds.
func TestSelfTestCall(t *testing.T) {
	for _, route := range []string{"", "#/activity", `#/tasks?q=");alert(1);("`, "#/tasks?q=</script>"} {
		js := selfTestCall(route)
		const pre, post = "window.crosschatSelfTest && window.crosschatSelfTest(", ")"
		if !strings.HasPrefix(js, pre) || !strings.HasSuffix(js, post) {
			t.Fatalf("call %q", js)
		}
		var got string
		if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(js, pre), post)), &got); err != nil || got != route {
			t.Errorf("call %q passes %q (%v), want %q", js, got, err, route)
		}
	}
}
