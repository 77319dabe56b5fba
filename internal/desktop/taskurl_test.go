package desktop

import (
	"slices"
	"testing"
)

func TestTaskURL(t *testing.T) {
	const id = "01a23bbe-ccfc-7928-8333-b2bb1882faf8"
	for _, tc := range []struct {
		arg, want string
		ok        bool
	}{
		{TaskURL(id), id, true},
		{"crosschat-relay://task/" + id + "/", id, true},
		{"CROSSCHAT-RELAY://task/" + id + "?from=toast", id, true},
		{"crosschat-relay:task/" + id, id, true},
		{TaskURL(""), "", true},
		{"crosschat-relay://task/<script>", "", true},
		{"crosschat-relay://task/" + id + "';alert(1)//", "", true},
		{"crosschat-relayx://task/" + id, "", false},
		{"https://example.com/task/" + id, "", false},
		{"--hidden", "", false},
		{"", "", false},
	} {
		got, ok := ParseTaskURL(tc.arg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseTaskURL(%q) = %q, %v; want %q, %v", tc.arg, got, ok, tc.want, tc.ok)
		}
	}
	if TaskURL("x y") != "crosschat-relay://open" {
		t.Error("an invalid id made a task URL")
	}
	id2, found, rest := URLArg([]string{"--port", "5000", TaskURL(id)})
	if id2 != id || !found || !slices.Equal(rest, []string{"--port", "5000"}) {
		t.Errorf("URLArg: %q %v %q", id2, found, rest)
	}
	if _, found, _ := URLArg([]string{"--hidden"}); found {
		t.Error("URLArg found a URL in --hidden")
	}
}
