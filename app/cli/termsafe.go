package cli

import "github.com/crosschat/crosschat-relay/app/termsafe"

// Every value from data a verb prints goes through termSafe (one line) or
// termSafeText (several lines); JSON output never does, but monitor's
// lines, JSON a person may watch in a terminal, go through termSafeJSON,
// which escapes what json.Marshal leaves (C1 controls, direction
// overrides) and keeps the JSON's meaning. They are app/termsafe's, which
// the window's import dialog shares.
var (
	termSafe     = termsafe.Line
	termSafeText = termsafe.Text
	termSafeJSON = termsafe.JSON
)
