#!/bin/sh
# Crosschat Relay's SessionStart hook for Claude Code. It registers the
# session's project folder with the local relay (crosschat-relay register)
# and prints one line: the session's live link, or why there is none. It
# always exits 0, so the session starts as it would without the plugin.
dir="${CLAUDE_PROJECT_DIR:-$PWD}"
if ! command -v crosschat-relay >/dev/null 2>&1; then
  printf '%s\n' '{"systemMessage":"Crosschat Relay: this session is not connected: crosschat-relay is not installed (not found on PATH)."}'
  exit 0
fi
out=$(crosschat-relay register --hook claude-code "$dir" 2>/dev/null)
if [ -n "$out" ]; then
  printf '%s\n' "$out"
else
  printf '%s\n' '{"systemMessage":"Crosschat Relay: this session is not connected: crosschat-relay register failed (run it in this folder to see why)."}'
fi
exit 0
