package mcp_test

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
)

var update = flag.Bool("update", false, "rewrite testdata/toolsnaps/*.snap")

// hints are a tool's annotations as the tests expect them.
type hints struct{ readOnly, destructive, idempotent bool }

// wantTools is the tool list with the annotations each tool must carry. The
// reasons are documented on tools() in tools.go; in short: only whoami,
// list_agents and get_task read without changing anything (get_task's
// presence refresh is bookkeeping); read_updates consumes updates by moving
// the cursor, so it is a write; cancel_task is the only destructive tool (a
// cancelled task is final); tools whose repeat leaves the relay unchanged
// (refused, or setting the same values) are idempotent.
var wantTools = map[string]hints{
	"whoami":           {true, false, true},
	"register_agent":   {false, false, true},
	"list_agents":      {true, false, true},
	"heartbeat":        {false, false, true},
	"post_task":        {false, false, false},
	"claim_next_task":  {false, false, false},
	"renew_task_lease": {false, false, true},
	"report_task":      {false, false, false},
	"release_task":     {false, false, true},
	"read_updates":     {false, false, false},
	"get_task":         {true, false, true},
	"cancel_task":      {false, true, true},
	"requeue_task":     {false, false, true},
	"request_changes":  {false, false, true},
}

// rawTools lists the tools as raw JSON with a bare tools/list POST.
func rawTools(t *testing.T, e *env) map[string]json.RawMessage {
	t.Helper()
	status, resp := rpc(t, e.url(), adminToken, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if status != 200 || resp["result"] == nil {
		t.Fatalf("tools/list: status %d, response %v", status, resp)
	}
	b, _ := json.Marshal(resp["result"])
	var result struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(b, &result); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, raw := range result.Tools {
		var named struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &named); err != nil {
			t.Fatal(err)
		}
		out[named.Name] = raw
	}
	if len(out) != len(result.Tools) {
		t.Fatalf("duplicate tool names in %d tools", len(result.Tools))
	}
	return out
}

func TestToolsList(t *testing.T) {
	e := newEnv(t)
	// Through the real client too: it must parse every definition.
	listed, err := e.client(adminToken).ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	var want []string
	for name := range wantTools {
		want = append(want, name)
	}
	slices.Sort(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools = %v\nwant %v", names, want)
	}

	for name, raw := range rawTools(t, e) {
		t.Run(name, func(t *testing.T) {
			var tool struct {
				Title       string                                         `json:"title"`
				Description string                                         `json:"description"`
				Annotations map[string]json.RawMessage                     `json:"annotations"`
				InputSchema struct{ Properties map[string]map[string]any } `json:"inputSchema"`
			}
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatal(err)
			}
			if tool.Title == "" || len(tool.Description) < 40 {
				t.Errorf("title %q / description %q too thin", tool.Title, tool.Description)
			}
			w := wantTools[name]
			for key, want := range map[string]bool{
				"readOnlyHint":    w.readOnly,
				"destructiveHint": w.destructive,
				"idempotentHint":  w.idempotent,
				"openWorldHint":   false,
			} {
				v, present := tool.Annotations[key]
				if !present {
					t.Errorf("annotation %s missing", key)
					continue
				}
				if got := string(v); got != map[bool]string{true: "true", false: "false"}[want] {
					t.Errorf("%s = %s, want %v", key, got, want)
				}
			}
			for prop, schema := range tool.InputSchema.Properties {
				if schema["type"] == nil || schema["description"] == nil {
					t.Errorf("property %s lacks a type or description: %v", prop, schema)
				}
			}
			checkSnapshot(t, name, raw)
		})
	}
}

// checkSnapshot compares a tool's JSON with testdata/toolsnaps/<name>.snap,
// ignoring key order. -update rewrites it; a missing snapshot is written
// locally but fails when CI is set, so snapshots must be committed.
func checkSnapshot(t *testing.T, name string, raw json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	pretty, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	pretty = append(pretty, '\n')
	path := filepath.Join("testdata", "toolsnaps", name+".snap")
	old, err := os.ReadFile(path)
	switch {
	case *update:
	case os.IsNotExist(err) && os.Getenv("CI") != "":
		t.Fatalf("snapshot %s is missing; run go test -run TestToolsList ./internal/mcp/ -update and commit it", path)
	case os.IsNotExist(err):
		t.Logf("writing missing snapshot %s", path)
	case err != nil:
		t.Fatal(err)
	default:
		if !jsonEqual(t, old, pretty) {
			t.Fatalf("tool %s changed; if intended, run with -update.\n--- snapshot\n%s\n--- now\n%s", name, old, pretty)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pretty, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Clients of every protocol era the CLIs use can list and call tools.
func TestProtocolEras(t *testing.T) {
	e := newEnv(t)
	for _, version := range eras {
		t.Run(eraName(version), func(t *testing.T) {
			c := e.clientAt(adminToken, version)
			listed, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil || len(listed.Tools) != len(wantTools) {
				t.Fatalf("list tools: %d tools, %v", len(listed.Tools), err)
			}
			var who struct{ Kind string }
			ok(t, call(t, c, "whoami", nil), &who)
			if who.Kind != "admin" {
				t.Fatalf("whoami = %+v", who)
			}
		})
	}
}

// A client that never initializes can still call a tool, as the upstream
// relay's tests do: the server is stateless.
func TestBareToolsCallWithoutInitialize(t *testing.T) {
	e := newEnv(t)
	status, resp := rpc(t, e.url(), adminToken,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if status != 200 {
		t.Fatalf("status %d: %v", status, resp)
	}
	b, _ := json.Marshal(resp["result"])
	var res struct {
		Content []struct {
			Type, Text string
		}
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].Text, `{"kind":"admin","note":"`) {
		t.Fatalf("unexpected result %s", b)
	}
	if res.StructuredContent["kind"] != "admin" {
		t.Fatalf("structuredContent = %v", res.StructuredContent)
	}

	// The resource, likewise, with no handshake.
	status, resp = rpc(t, e.url(), adminToken,
		`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"crosschat://protocol"}}`)
	if status != 200 || resp["result"] == nil {
		t.Fatalf("resources/read: %d %v", status, resp)
	}

	// A stateless endpoint has nothing to stream: GET is refused.
	req, _ := http.NewRequest(http.MethodGet, e.url(), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp = %d, want 405", r.StatusCode)
	}
}

func TestProtocolResource(t *testing.T) {
	e := newEnv(t)
	c := e.client(e.agent("alice"))
	ctx := context.Background()
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatalf("list resources: %v", err)
	}
	if len(list.Resources) != 1 {
		t.Fatalf("resources = %+v", list.Resources)
	}
	r := list.Resources[0]
	if r.URI != relaymcp.ProtocolURI || r.Name != "relay-protocol" || r.MIMEType != "text/markdown" || r.Title == "" || r.Description == "" {
		t.Errorf("resource = %+v", r)
	}
	req := mcp.ReadResourceRequest{}
	req.Params.URI = relaymcp.ProtocolURI
	read, err := c.ReadResource(ctx, req)
	if err != nil {
		t.Fatalf("read resource: %v", err)
	}
	if len(read.Contents) != 1 {
		t.Fatalf("contents = %+v", read.Contents)
	}
	text, isText := mcp.AsTextResourceContents(read.Contents[0])
	if !isText || text.Text != relaymcp.ProtocolMarkdown() || !strings.Contains(text.Text, "# Crosschat protocol") || text.MIMEType != "text/markdown" {
		t.Errorf("contents = %+v", read.Contents[0])
	}

	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err == nil && len(prompts.Prompts) > 0 {
		t.Errorf("prompts = %+v, want none", prompts.Prompts)
	}
}
