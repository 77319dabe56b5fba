#!/usr/bin/env bash
# The tray of the real desktop app in CI: started hidden under Xvfb on a
# private D-Bus session bus, it must own a StatusNotifierItem name and export
# its menu (read with gdbus, dumped to <out>/tray-menu.txt); clicking the
# menu's "Open dashboard" over D-Bus maps the window (screenshot
# <out>/tray-open.png), and "Quit" stops the app with exit status 0.
# (Notify calls are checked by `make test-desktop` against a fake
# notifications service on such a bus.)
#
# usage: .ci/tray.sh <desktop binary> <out dir>
set -uo pipefail
APP=$1 OUT=$2
mkdir -p "$OUT"
if [ -z "${DISPLAY:-}" ]; then
  exec xvfb-run -a -s "-screen 0 1280x860x24" "$0" "$@"
fi
if [ -z "${CROSSCHAT_TRAY_BUS:-}" ]; then
  exec env CROSSCHAT_TRAY_BUS=1 dbus-run-session -- bash "$0" "$@"
fi
WORK=$(mktemp -d); DATA=$WORK/data
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup(){ [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail(){ echo "tray: $*"; echo "--- app log"; tail -20 "$OUT/tray-app.log"; exit 1; }

HOME=$WORK XDG_CONFIG_HOME=$WORK/config XDG_DATA_HOME=$WORK/share \
  "$APP" --hidden --port "$PORT" --data-dir "$DATA" >"$OUT/tray-app.log" 2>&1 </dev/null &
PID=$!
for _ in $(seq 150); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || fail "the app's relay never answered /health"

NAME=org.kde.StatusNotifierItem-$PID-1
owned=""
for _ in $(seq 100); do
  gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
    --method org.freedesktop.DBus.NameHasOwner "$NAME" 2>/dev/null | grep -q true && { owned=1; break; }
  sleep 0.1
done
[ -n "$owned" ] || fail "nobody owns $NAME on the session bus"

menu(){ gdbus call --session --dest "$NAME" --object-path /StatusNotifierItem/menu \
  --method com.canonical.dbusmenu.GetLayout 0 -- -1 '[]'; }
# item_id LABEL: the dbusmenu id of the item with that label.
item_id(){ menu | python3 -c '
import re, sys
label = sys.argv[1]
for m in re.finditer(r"<\((\d+), \{([^{}]*)\}", sys.stdin.read()):
    if "'"'"'label'"'"': <'"'"'%s'"'"'>" % label in m.group(2):
        print(m.group(1)); break' "$1"; }
for _ in $(seq 50); do menu 2>/dev/null | grep -q "'Quit'" && break; sleep 0.1; done
menu >"$OUT/tray-menu.txt" 2>&1 || fail "GetLayout on $NAME failed: $(cat "$OUT/tray-menu.txt")"
# The tooltip gets its counts once the app has read them: wait for them.
tooltip(){ gdbus call --session --dest "$NAME" --object-path /StatusNotifierItem \
  --method org.freedesktop.DBus.Properties.Get org.kde.StatusNotifierItem ToolTip; }
for _ in $(seq 50); do tooltip 2>/dev/null | grep -q "Crosschat Relay: 0 queued" && break; sleep 0.1; done
tooltip >"$OUT/tray-tooltip.txt" 2>&1 || fail "no ToolTip property"
for label in "Open dashboard" "Pause workers" "Start at login" "Notifications" "Open data folder" "Quit"; do
  grep -q "'$label'" "$OUT/tray-menu.txt" || fail "the tray menu lacks \"$label\" (dump: $OUT/tray-menu.txt)"
done
grep -q "Crosschat Relay: 0 queued" "$OUT/tray-tooltip.txt" || fail "tooltip without counts: $(cat "$OUT/tray-tooltip.txt")"

viewable(){ xwininfo -name "Crosschat Relay" 2>/dev/null | grep -q "IsViewable"; }
viewable && fail "the window is showing although the app started --hidden"
OPEN=$(item_id "Open dashboard"); QUIT=$(item_id "Quit")
[ -n "$OPEN" ] && [ -n "$QUIT" ] || fail "no ids for Open dashboard/Quit in the menu"
click(){ gdbus call --session --dest "$NAME" --object-path /StatusNotifierItem/menu \
  --method com.canonical.dbusmenu.Event "$1" clicked '<"">' 0 >/dev/null; }
click "$OPEN" || fail "clicking Open dashboard over D-Bus failed"
shown=""
for _ in $(seq 100); do viewable && { shown=1; break; }; sleep 0.1; done
[ -n "$shown" ] || fail "Open dashboard did not show the window"
sleep 2 # let WebKit paint
import -window root "$OUT/tray-open.png" || fail "screenshot"

click "$QUIT" || fail "clicking Quit over D-Bus failed"
for _ in $(seq 150); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && fail "Quit did not stop the app"
wait "$PID"; rc=$?; PID=""
[ "$rc" -eq 0 ] || fail "the app exited with $rc after Quit"
echo "tray: $NAME exported its menu ($OUT/tray-menu.txt), Open showed the window ($OUT/tray-open.png), Quit stopped the app"
