package desktop

import (
	"encoding/base64"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
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
			if s := toastScript(tc.n); strings.Count(s, "FromBase64String('") != 1 || !strings.Contains(s, "CreateToastNotifier('"+ToastAppID+"')") {
				t.Errorf("script:\n%s", s)
			}
		})
	}
}

// Ensure no text of a toast reaches its PowerShell as code: a title that
// ends PowerShell's single-quoted string (with ' or any of U+2018 to
// U+201B, which PowerShell takes as quotes too) and calls a program leaves
// the script the same but for its base64, which decodes to the toast.
func TestToastTextIsNoCode(t *testing.T) {
	plain := Notification{Title: "Task finished", Body: "x"}
	strip := func(s string) string {
		return regexp.MustCompile(`FromBase64String\('[A-Za-z0-9+/=]*'\)`).ReplaceAllString(s, "FromBase64String('')")
	}
	for _, q := range []string{"'", "\u2018", "\u2019", "\u201a", "\u201b"} {
		n := Notification{Title: "Please review" + q + "); Start-Process calc.exe; (" + q, Body: q + "$(calc)" + q + " (mallory)", TaskID: "01a23bbe-ccfc-7928-8333-b2bb1882faf8"}
		s := toastScript(n)
		if strings.Contains(s, "calc") || strip(s) != strip(toastScript(plain)) {
			t.Errorf("quote %q: the agent's text is in the script:\n%s", q, s)
		}
		enc := regexp.MustCompile(`FromBase64String\('([A-Za-z0-9+/=]*)'\)`).FindStringSubmatch(s)
		if enc == nil {
			t.Fatalf("no base64 in the script:\n%s", s)
		}
		if xml, err := base64.StdEncoding.DecodeString(enc[1]); err != nil || string(xml) != toastXML(n) {
			t.Errorf("quote %q: the base64 decodes to %q, %v; want the toast's XML", q, xml, err)
		}
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
