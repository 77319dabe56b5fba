package cli

import "github.com/crosschat/crosschat-relay/app/termsafe"

// Every value from data a verb prints goes through termSafe (one line) or
// termSafeText (several lines); JSON output never does. They are
// app/termsafe's, which the window's import dialog shares.
var (
	termSafe     = termsafe.Line
	termSafeText = termsafe.Text
)
