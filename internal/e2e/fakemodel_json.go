package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// JSON and event-stream helpers of the fake model.

// --- helpers --------------------------------------------------------------

// walkToolReferences calls found with the tool name of every
// {"type": "tool_reference"} object anywhere in v.
func walkToolReferences(v any, found func(name string)) {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			walkToolReferences(e, found)
		}
	case map[string]any:
		if str(t, "type") == "tool_reference" {
			if n := str(t, "tool_name"); n != "" {
				found(n)
			} else if n := str(t, "name"); n != "" {
				found(n)
			}
		}
		for _, e := range t {
			walkToolReferences(e, found)
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sseWriter starts an event stream and returns a function that sends one
// event (no "event:" line when name is "").
func sseWriter(w http.ResponseWriter) func(name string, data any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return func(name string, data any) {
		b, _ := json.Marshal(data)
		if name != "" {
			fmt.Fprintf(w, "event: %s\n", name)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

func asObj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func arr(m map[string]any, key string) []any {
	a, _ := m[key].([]any)
	return a
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// contentText is the text of a message or tool result: a string, or the
// text of each part of a content array, joined by newlines.
func contentText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var parts []string
		for _, p := range t {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			} else if s := str(asObj(p), "text"); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if s := str(t, "text"); s != "" {
			return s
		}
		b, _ := json.Marshal(t)
		return string(b)
	}
	return ""
}

// TaskID finds the first "id" that is a UUID in a JSON text (a post_task
// result), or "".
func TaskID(result string) string {
	m := taskIDPattern.FindStringSubmatch(result)
	if m == nil {
		return ""
	}
	return m[1]
}

var taskIDPattern = regexp.MustCompile(`\\?"id\\?"\s*:\s*\\?"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
