package desktop

import (
	"encoding/base64"
	"os/exec"
	"strings"
	"unicode/utf16"
)

// toastNotifier shows a Windows toast through PowerShell's WinRT access
// (no extra library). A click brings the Start-menu app forward; it cannot
// name the task (that needs a registered COM activator).
type toastNotifier struct{}

func newNotifier(func(string)) (Notifier, error) { return toastNotifier{}, nil }

func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

func (toastNotifier) Notify(n Notification) error {
	script := `[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] | Out-Null
[Windows.Data.Xml.Dom.XmlDocument, Windows.Data.Xml.Dom.XmlDocument, ContentType = WindowsRuntime] | Out-Null
$x = New-Object Windows.Data.Xml.Dom.XmlDocument
$x.LoadXml('<toast><visual><binding template="ToastGeneric"><text>` + strings.ReplaceAll(xmlText(n.Title), "'", "''") + `</text><text>` + strings.ReplaceAll(xmlText(n.Body), "'", "''") + `</text></binding></visual></toast>')
[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier('` + DisplayName + `').Show([Windows.UI.Notifications.ToastNotification]::new($x))`
	u := utf16.Encode([]rune(script))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		b[2*i], b[2*i+1] = byte(c), byte(c>>8)
	}
	cmd := exec.Command("powershell.exe", "-NoProfile", "-NonInteractive", "-EncodedCommand", base64.StdEncoding.EncodeToString(b))
	if err := cmd.Start(); err != nil {
		return notifyErr(err)
	}
	go cmd.Wait() //nolint:errcheck // a toast that failed to show has no one to tell
	return nil
}

func (toastNotifier) Close() error { return nil }
