#!/usr/bin/env bash
# The native window in CI: start the built desktop app under Xvfb with its
# own relay, seed data through the running relay, wait until the window's
# page shows it (the app's self-test mode writes the page's report to a
# file: its text, each chart's pixels in the series' colours, the
# conversation tree; see frontend/src/lib/selftest.ts), then a conversation
# across two agents: the Activity page's charts must be drawn (their series
# on a canvas, not a blank one, and the canvas shown on the screen) and the
# root task's drawer must show the conversation tree. Screenshots of each,
# then stop the app with `crosschat-relay quit`. The app runs under the
# C.UTF-8 locale, a minimal Debian's, of which WebKitGTK makes the language
# "C": Intl refuses it, and uPlot could not load (frontend/src/lib/locale.ts).
#
# usage: .ci/gui.sh <desktop binary> <headless binary for the CLI verbs> <out dir>
set -uo pipefail
APP=$1 CLI=$2 OUT=$3
mkdir -p "$OUT"
if [ -z "${DISPLAY:-}" ]; then
  exec xvfb-run -a -s "-screen 0 1280x860x24" "$0" "$@"
fi
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d); DATA=$WORK/data
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
REPORT=$WORK/report.json
cleanup(){ [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail(){ echo "gui: $*"; echo "--- app log"; tail -20 "$OUT/gui-app.log"; exit 1; }
helper(){ python3 "$HERE/gui_helper.py" "$@"; }

# await WHAT CHECK ARGS...: poll the window's report until it shows what
# CHECK asks (gui_helper.py check), for 30 s at most; fail saying WHAT and
# what the page showed instead.
await(){
  local what=$1 why=""; shift
  for _ in $(seq 150); do
    why=$(helper check "$REPORT" "$@") && return 0
    sleep 0.2
  done
  cp "$REPORT" "$OUT/gui-page.json" 2>/dev/null
  fail "$what: $why (the page's last report: $OUT/gui-page.json)"
}
# show ROUTE: ask the window for a dashboard route; the self-test hook goes there.
show(){ printf '%s\n' "$1" >"$REPORT.route"; }
# agent SLUG NAME: add an agent with the CLI; prints its token.
agent(){
  "$CLI" agents add "$1" --name "$2" --model test --capability text-output --json --port "$PORT" --data-dir "$DATA" |
    python3 -c 'import json,sys; o=json.load(sys.stdin); print(o.get("token") or o["reveal"]["token"])'
}
# mcp TOKEN TOOL ARGS: call an MCP tool as the agent of TOKEN; prints its result (JSON).
mcp(){
  curl -sf -X POST "http://127.0.0.1:$PORT/mcp" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}" | helper mcp
}

# A throwaway HOME keeps autostart entries and window geometry off the machine.
HOME=$WORK XDG_CONFIG_HOME=$WORK/config XDG_DATA_HOME=$WORK/share CROSSCHAT_SELFTEST=$REPORT \
  LANG=C.UTF-8 LC_ALL=C.UTF-8 LANGUAGE= \
  "$APP" --port "$PORT" --data-dir "$DATA" >"$OUT/gui-app.log" 2>&1 </dev/null &
PID=$!
for _ in $(seq 150); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || fail "the app's relay never answered /health"

mapped=""
for _ in $(seq 100); do
  xwininfo -root -tree 2>/dev/null | grep -q '"Crosschat Relay' && { mapped=1; break; }
  sleep 0.1
done
[ -n "$mapped" ] || fail "no window titled Crosschat Relay was mapped"

TOKEN=$("$CLI" token --data-dir "$DATA") || fail "no admin token"
BOT=$(agent gui-bot "GUI Bot") || fail "agents add gui-bot"
PEN=$(agent gui-pen "GUI Pen") || fail "agents add gui-pen"
TITLE="Draw the relay diagram"
ROOT=$(curl -sf -X POST "http://127.0.0.1:$PORT/bridge/Tasks.Post" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d "[{\"recipientSlug\":\"gui-bot\",\"title\":\"$TITLE\",\"instructions\":\"Boxes and arrows.\"}]" |
  helper field id) || fail "post task"
await "the window never showed the task posted to its relay" text "$TITLE"

# The conversation: gui-bot takes the operator's task and hands two parts
# to gui-pen, which completes one and is blocked on the other.
claimed(){ [ "$(mcp "$1" claim_next_task '{"waitMs":5000}' | helper field task.id)" = "$2" ] || fail "claim_next_task did not give $2"; }
claimed "$BOT" "$ROOT"
ARROWS=$(mcp "$BOT" post_task "{\"recipientSlug\":\"gui-pen\",\"title\":\"Ink the arrows\",\"instructions\":\"Black, 2 px.\",\"parentTaskId\":\"$ROOT\"}" | helper field id) || fail "hand-off 1"
LABELS=$(mcp "$BOT" post_task "{\"recipientSlug\":\"gui-pen\",\"title\":\"Label the boxes\",\"instructions\":\"One word each.\",\"parentTaskId\":\"$ROOT\"}" | helper field id) || fail "hand-off 2"
claimed "$PEN" "$ARROWS"
mcp "$PEN" report_task "{\"taskId\":\"$ARROWS\",\"kind\":\"completed\",\"message\":\"Inked.\"}" >/dev/null || fail "complete $ARROWS"
claimed "$PEN" "$LABELS"
mcp "$PEN" report_task "{\"taskId\":\"$LABELS\",\"kind\":\"blocked\",\"message\":\"No label text.\"}" >/dev/null || fail "block $LABELS"

CHARTS=(chart-throughput chart-latency chart-open-work)
show "#/activity"
await "the Activity page's charts were not drawn" charts "#/activity" 50 "${CHARTS[@]}"
# What the page drew must reach the screen too: a canvas WebKit never
# composites into the window looks blank there while the page finds its
# pixels. Poll screenshots until each chart's place is more than one colour.
on_screen=""
for _ in $(seq 40); do
  import -window root "$OUT/gui.png" || fail "screenshot"
  GEOM=$(xwininfo -root -tree | sed -n 's/.*"[^"]*Crosschat Relay": ([^)]*) *\([0-9]*x[0-9]*+[0-9]*+[0-9]*\).*/\1/p' | head -1)
  why=$(helper shown "$REPORT" "$OUT/gui.png" "$GEOM" "${CHARTS[@]}") && { on_screen=1; break; }
  sleep 0.2
done
[ -n "$on_screen" ] || fail "the Activity page's charts are not on the screen: $why ($OUT/gui.png)"
show "#/activity?task=$ROOT"
await "the root task's drawer did not show the conversation" tree "#/activity?task=$ROOT" gui-bot,gui-pen \
  "1:$TITLE" "2:Ink the arrows" "2:Label the boxes"
import -window root "$OUT/gui-tree.png" || fail "screenshot"
cp "$REPORT" "$OUT/gui-page.json"

# Launching the app again must bring the running one forward and exit, not
# start a second relay (with no D-Bus session it asks the running relay).
HOME=$WORK XDG_CONFIG_HOME=$WORK/config XDG_DATA_HOME=$WORK/share \
  timeout 60 "$APP" --port "$PORT" --data-dir "$DATA" >"$OUT/gui-second.log" 2>&1 </dev/null
second=$?
[ "$second" -eq 0 ] || fail "a second launch exited with $second (log: $OUT/gui-second.log)"
kill -0 "$PID" 2>/dev/null || fail "the first instance died when a second one was launched"
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || fail "the first instance's relay stopped answering"

"$CLI" quit --port "$PORT" --data-dir "$DATA" >/dev/null || fail "quit verb"
for _ in $(seq 150); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && fail "the app did not quit"
wait "$PID"; rc=$?; PID=""
[ "$rc" -eq 0 ] || fail "the app exited with $rc"
echo "gui: the window rendered its relay's data, drew the Activity page's charts ($OUT/gui.png) and a conversation's tree ($OUT/gui-tree.png), a second launch deferred to it, and it quit cleanly"
