package desktop

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToastOpensItsTask: a toast about a task carries the URL of that task
// as its protocol-activation launch argument, its text escaped.
func TestToastOpensItsTask(t *testing.T) {
	const id = "01a23bbe-ccfc-7928-8333-b2bb1882faf8"
	for _, tc := range []struct {
		name   string
		n      Notification
		launch string
	}{
		{"a task", Notification{Title: "Blocked: <build>", Body: `"it's" & done`, TaskID: id}, "crosschat-relay://task/" + id},
		{"several tasks", Notification{Title: "3 tasks finished", Body: "a\nb"}, "crosschat-relay://open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc struct {
				ActivationType string   `xml:"activationType,attr"`
				Launch         string   `xml:"launch,attr"`
				Text           []string `xml:"visual>binding>text"`
			}
			if err := xml.Unmarshal([]byte(toastXML(tc.n)), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.ActivationType != "protocol" || doc.Launch != tc.launch {
				t.Errorf("activation %q launch %q, want protocol %q", doc.ActivationType, doc.Launch, tc.launch)
			}
			if len(doc.Text) != 2 || doc.Text[0] != tc.n.Title || doc.Text[1] != tc.n.Body {
				t.Errorf("text %q", doc.Text)
			}
			if s := toastScript(tc.n); strings.Count(s, "LoadXml('") != 1 || !strings.Contains(s, "CreateToastNotifier('"+ToastAppID+"')") {
				t.Errorf("script:\n%s", s)
			}
		})
	}
}

// TestRegisterURLScheme: the current user's registry sends
// crosschat-relay:// URLs to the exe, quoted, with the URL as one argument.
func TestRegisterURLScheme(t *testing.T) {
	if os.Getenv("CROSSCHAT_UNDER_WINE") == "" {
		t.Skip("writes HKCU\\Software\\Classes: run under wine (.ci/windows.sh) or set CROSSCHAT_UNDER_WINE on a throwaway account")
	}
	exe := filepath.Join(`C:\Program Files`, "Crosschat", "crosschat-relay.exe")
	if err := RegisterURLScheme(exe); err != nil {
		t.Fatal(err)
	}
	got, err := URLSchemeHandler()
	if err != nil || got != `"C:\Program Files\Crosschat\crosschat-relay.exe" "%1"` {
		t.Fatalf("handler %q, %v", got, err)
	}
}
