package desktop

import "strings"

// URLScheme is the app's own URL scheme. A Windows toast opens
// crosschat-relay://task/<id> when clicked: Windows starts the program with
// that URL as its argument, and the running app (single instance) shows the
// task.
const URLScheme = "crosschat-relay"

// TaskURL is the URL that opens task id in the window ("" opens the window).
func TaskURL(id string) string {
	if id == "" || !validTaskID(id) {
		return URLScheme + "://open"
	}
	return URLScheme + "://task/" + id
}

// ParseTaskURL reports whether arg is one of the app's URLs, and the task it
// names ("" for the window alone). Anything else in the URL is ignored.
func ParseTaskURL(arg string) (taskID string, ok bool) {
	rest, found := strings.CutPrefix(strings.ToLower(arg[:min(len(arg), len(URLScheme)+1)]), URLScheme+":")
	if !found || rest != "" {
		return "", false
	}
	path := strings.TrimLeft(arg[len(URLScheme)+1:], "/")
	id, isTask := strings.CutPrefix(path, "task/")
	if !isTask {
		return "", true
	}
	id, _, _ = strings.Cut(id, "/")
	id, _, _ = strings.Cut(id, "?")
	if !validTaskID(id) {
		return "", true
	}
	return id, true
}

// URLArg finds the app's URL among command-line arguments: the task it
// names, and the other arguments.
func URLArg(args []string) (taskID string, found bool, rest []string) {
	for _, a := range args {
		if id, ok := ParseTaskURL(a); ok && !found {
			taskID, found = id, true
			continue
		}
		rest = append(rest, a)
	}
	return taskID, found, rest
}

// validTaskID: task ids are UUIDs; anything else never reaches the page.
func validTaskID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}
