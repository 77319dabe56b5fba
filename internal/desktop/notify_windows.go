package desktop

import (
	"encoding/base64"
	"os/exec"
	"strings"
	"unicode/utf16"
)

// ToastAppID is the AppUserModelID the toasts are shown under. Windows shows
// toasts of an unpackaged program only for an AppUserModelID registered
// under HKCU\Software\Classes\AppUserModelId (RegisterURLScheme does it).
const ToastAppID = "Crosschat.CrosschatRelay"

// toastNotifier shows a Windows toast through PowerShell's WinRT access
// (no extra library). A click activates the toast's launch URL,
// crosschat-relay://task/<id> (protocol activation): Windows starts the
// registered program with the URL, and the running app shows the task.
type toastNotifier struct{}

func newNotifier(func(string)) (Notifier, error) { return toastNotifier{}, nil }

func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// toastXML is the toast's XML: its text, and the URL a click opens.
func toastXML(n Notification) string {
	return `<toast activationType="protocol" launch="` + xmlText(TaskURL(n.TaskID)) + `"><visual><binding template="ToastGeneric"><text>` +
		xmlText(n.Title) + `</text><text>` + xmlText(n.Body) + `</text></binding></visual></toast>`
}

// toastScript is the PowerShell that shows the toast. The toast's XML,
// which holds text from agents, goes in as base64: no text can end the
// string it is in (PowerShell ends a single-quoted string at ' and at
// each of U+2018 to U+201B too) and run as PowerShell.
func toastScript(n Notification) string {
	return `[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] | Out-Null
[Windows.Data.Xml.Dom.XmlDocument, Windows.Data.Xml.Dom.XmlDocument, ContentType = WindowsRuntime] | Out-Null
$x = New-Object Windows.Data.Xml.Dom.XmlDocument
$x.LoadXml([Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('` + base64.StdEncoding.EncodeToString([]byte(toastXML(n))) + `')))
[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier('` + ToastAppID + `').Show([Windows.UI.Notifications.ToastNotification]::new($x))`
}

func (toastNotifier) Notify(n Notification) error {
	u := utf16.Encode([]rune(toastScript(n)))
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
