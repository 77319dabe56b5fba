package mcp_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

// toolCase is one row of a tool table test: who calls which tool with what
// arguments, and either the error code or fields the result must have.
// The rows of a table run in order against one relay, so a row can use
// what an earlier one made.
type toolCase struct {
	name string
	as   string // caller: a key of the table's clients
	tool string
	// args are the arguments; a string value "$name" is replaced by the
	// task id an earlier row saved under that name.
	args map[string]any
	// code is the expected error code; "" expects success.
	code string
	// want are result fields that must equal these values (compared as
	// JSON). "a.b" reaches into objects; "a#len" (or "#len" for the result
	// itself) is the length of an array. A string value "$name" is the
	// task id saved under that name, as in args.
	want map[string]any
	// save keeps the result's task id ("id", or "task.id" for a claim)
	// under this name.
	save string
}

// runToolTable runs the rows in order.
func runToolTable(t *testing.T, clients map[string]*client.Client, cases []toolCase) {
	t.Helper()
	saved := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, found := clients[tc.as]
			if !found {
				t.Fatalf("no client %q", tc.as)
			}
			resolve := func(v any) any {
				if s, isStr := v.(string); isStr && strings.HasPrefix(s, "$") {
					id, known := saved[s[1:]]
					if !known {
						t.Fatalf("nothing saved as %s", s)
					}
					return id
				}
				return v
			}
			args := map[string]any{}
			for k, v := range tc.args {
				args[k] = resolve(v)
			}
			res := call(t, c, tc.tool, args)
			if tc.code != "" {
				fails(t, res, tc.code)
				return
			}
			var got any
			ok(t, res, &got, wrapKeyFor(tc.tool)...)
			if tc.save != "" {
				id, _ := lookup(got, "id")
				if tc.tool == "claim_next_task" {
					id, _ = lookup(got, "task.id")
				}
				s, isStr := id.(string)
				if !isStr || s == "" {
					t.Fatalf("no task id to save in %s", resultText(t, res))
				}
				saved[tc.save] = s
			}
			for path, want := range tc.want {
				v, err := lookup(got, path)
				if err != "" {
					t.Errorf("%s: %s in %s", path, err, resultText(t, res))
					continue
				}
				wj, _ := json.Marshal(resolve(want))
				vj, _ := json.Marshal(v)
				if string(wj) != string(vj) {
					t.Errorf("%s = %s, want %s", path, vj, wj)
				}
			}
		})
	}
}

// wrapKeyFor is the structuredContent wrapper of a tool whose text is an array.
func wrapKeyFor(tool string) []string {
	if tool == "list_agents" {
		return []string{"agents"}
	}
	return nil
}

// lookup follows a "a.b" ("a.0" for an element) or "a#len" path into a decoded JSON value.
func lookup(v any, path string) (any, string) {
	path, length := strings.CutSuffix(path, "#len")
	if path != "" {
		for _, key := range strings.Split(path, ".") {
			if a, isArr := v.([]any); isArr {
				i, err := strconv.Atoi(key)
				if err != nil || i < 0 || i >= len(a) {
					return nil, "no element " + key
				}
				v = a[i]
				continue
			}
			m, isObj := v.(map[string]any)
			if !isObj {
				return nil, "not an object at " + key
			}
			if v, isObj = m[key]; !isObj {
				return nil, "no field " + key
			}
		}
	}
	if length {
		a, isArr := v.([]any)
		if !isArr {
			return nil, "not an array"
		}
		return len(a), ""
	}
	return v, ""
}
