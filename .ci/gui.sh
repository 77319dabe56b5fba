#!/usr/bin/env bash
# The native window in CI: start the built desktop app under Xvfb with its
# own relay, seed data through the running relay, wait until the window's
# page shows it (the app's self-test mode writes the page text to a file),
# take a screenshot, then stop the app with `crosschat-relay quit`.
#
# usage: .ci/gui.sh <desktop binary> <headless binary for the CLI verbs> <out dir>
set -uo pipefail
APP=$1 CLI=$2 OUT=$3
mkdir -p "$OUT"
if [ -z "${DISPLAY:-}" ]; then
  exec xvfb-run -a -s "-screen 0 1280x860x24" "$0" "$@"
fi
WORK=$(mktemp -d); DATA=$WORK/data
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
REPORT=$WORK/report.txt
cleanup(){ [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail(){ echo "gui: $*"; echo "--- app log"; tail -20 "$OUT/gui-app.log"; exit 1; }

# A throwaway HOME keeps autostart entries and window geometry off the machine.
HOME=$WORK XDG_CONFIG_HOME=$WORK/config XDG_DATA_HOME=$WORK/share CROSSCHAT_SELFTEST=$REPORT \
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
"$CLI" agents add gui-bot --name "GUI Bot" --model test --capability text-output --port "$PORT" --data-dir "$DATA" >/dev/null || fail "agents add"
TITLE="Draw the relay diagram"
curl -sf -X POST "http://127.0.0.1:$PORT/bridge/Tasks.Post" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d "[{\"recipientSlug\":\"gui-bot\",\"title\":\"$TITLE\",\"instructions\":\"Boxes and arrows.\"}]" >/dev/null || fail "post task"

shown=""
for _ in $(seq 150); do
  if [ -s "$REPORT" ] && grep -q "$TITLE" "$REPORT"; then shown=1; break; fi
  sleep 0.2
done
cp "$REPORT" "$OUT/gui-page.txt" 2>/dev/null
[ -n "$shown" ] || fail "the window never showed the task posted to its relay (page text in $OUT/gui-page.txt)"
sleep 2 # let WebKit finish painting
import -window root "$OUT/gui.png" || fail "screenshot"

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
echo "gui: the window rendered its relay's data ($OUT/gui.png), a second launch deferred to it, and it quit cleanly"
