package harness

import (
	"regexp"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// codexParser parses the JSONL of codex exec --json.
type codexParser struct {
	streamed
}

func (p *codexParser) Line(line string) []relay.ActivityEntry {
	m, ok := object(line)
	if !ok {
		return nonJSON(line)
	}
	typ := str(m, "type")
	switch typ {
	case "thread.started":
		if s := str(m, "thread_id"); s != "" {
			p.session = s
		}
		return nil
	case "turn.failed":
		msg := str(obj(m, "error"), "message")
		if msg == "" {
			msg = "Codex stopped the turn."
		}
		// The turn failed (a quota, an API error): what Codex said is its
		// error, not an answer. A later turn that completes clears it.
		p.failure = msg
		return []relay.ActivityEntry{{Kind: relay.StepError, Status: relay.StepFailed, Text: msg}}
	case "turn.completed":
		p.failure = ""
		return nil
	case "error":
		msg := str(m, "message")
		if msg == "" {
			msg = "Codex reported an error."
		}
		return []relay.ActivityEntry{{Kind: relay.StepError, Status: relay.StepFailed, Text: msg}}
	case "item.started", "item.updated", "item.completed":
	default:
		return nil
	}
	item := obj(m, "item")
	if item == nil {
		return nil
	}
	done := typ == "item.completed"
	status := relay.StepRunning
	switch st := str(item, "status"); {
	case st == "failed" || st == "declined":
		status = relay.StepFailed
	case exitFailed(item["exit_code"]):
		status = relay.StepFailed
	case done || st == "completed":
		status = relay.StepOK
	}
	e := relay.ActivityEntry{Status: status, Ref: str(item, "id")}
	switch str(item, "type") {
	case "agent_message":
		if !done {
			return nil
		}
		t := str(item, "text")
		p.answer = t
		if strings.TrimSpace(t) == "" {
			return nil
		}
		return []relay.ActivityEntry{{Kind: relay.StepMessage, Text: strings.TrimSpace(t), Ref: e.Ref}}
	case "reasoning":
		t := strings.TrimSpace(str(item, "text"))
		if !done || t == "" {
			return nil
		}
		return []relay.ActivityEntry{{Kind: relay.StepThinking, Text: t, Ref: e.Ref}}
	case "command_execution":
		e.Kind = relay.StepCommand
		e.Text = UnwrapShell(str(item, "command"))
		e.Detail = strings.TrimRight(str(item, "aggregated_output"), " \t\r\n")
	case "file_change":
		e.Kind = relay.StepFile
		e.Text = joinLines(item, "changes", func(c map[string]any) string {
			path := str(c, "path")
			if path == "" {
				return ""
			}
			switch str(c, "kind") {
			case "add":
				return "Added " + path
			case "delete":
				return "Deleted " + path
			}
			return "Updated " + path
		})
		if e.Text == "" {
			e.Text = "Changed files"
		}
	case "mcp_tool_call":
		e.Kind = relay.StepTool
		e.Text = str(item, "server") + " › " + str(item, "tool")
		if msg := str(obj(item, "error"), "message"); msg != "" {
			e.Detail = msg
		} else if msg := str(item, "error"); msg != "" {
			e.Detail = msg
		} else {
			e.Detail = text(obj(item, "result"))
		}
	case "web_search":
		e.Kind = relay.StepTool
		e.Text = "Web search: " + str(item, "query")
	case "todo_list":
		e.Kind = relay.StepPlan
		e.Text = joinLines(item, "items", func(it map[string]any) string {
			if checked, _ := it["completed"].(bool); checked {
				return "☑ " + str(it, "text")
			}
			return "☐ " + str(it, "text")
		})
	case "error":
		e.Kind = relay.StepError
		e.Status = relay.StepFailed
		e.Text = str(item, "message")
	default:
		return nil
	}
	return []relay.ActivityEntry{e}
}

func exitFailed(v any) bool {
	n, ok := v.(float64)
	return ok && n != 0
}

// shellWrapper matches a command run through a shell: bash -lc '…',
// powershell.exe -Command '…', cmd /c …
var shellWrapper = regexp.MustCompile(`(?is)^\s*(?:"(?:[^"]*[/\\])?(?:bash|zsh|sh|powershell|pwsh|cmd)(?:\.exe)?"|(?:[^"\s]*[/\\])?(?:bash|zsh|sh|powershell|pwsh|cmd)(?:\.exe)?)(?:\s+-(?:NoProfile|NoLogo|NonInteractive))*\s+(?:-lc|-c|-Command|/c)\s+(.+?)\s*$`)

// UnwrapShell returns the command inside a shell wrapper
// ("/bin/bash -lc 'ls -la'" → "ls -la"), or cmd unchanged.
func UnwrapShell(cmd string) string {
	m := shellWrapper.FindStringSubmatch(cmd)
	if m == nil {
		return cmd
	}
	inner := m[1]
	if len(inner) >= 2 {
		if q := inner[0]; (q == '\'' || q == '"') && inner[len(inner)-1] == q && !strings.ContainsRune(inner[1:len(inner)-1], rune(q)) {
			inner = inner[1 : len(inner)-1]
		}
	}
	return inner
}
