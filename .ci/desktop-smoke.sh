#!/usr/bin/env bash
# Starts the desktop app on an X display (run it under xvfb-run) and checks
# that the window maps, the relay inside it answers /health, and the page
# reports its text through a Go binding (CROSSCHAT_SELFTEST names the file
# the app writes it to). Takes a screenshot, then stops the app.
#
#   xvfb-run -a -s "-screen 0 1280x900x24" bash .ci/desktop-smoke.sh <app-binary> <out-dir>
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 <app-binary> <out-dir>" >&2; exit 2; }
BIN=$1 OUT=$2
[ -x "$BIN" ] || { echo "FAIL: $BIN not found or not executable"; exit 2; }
[ -n "${DISPLAY:-}" ] || { echo "FAIL: no DISPLAY; run under xvfb-run"; exit 2; }
mkdir -p "$OUT"

port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})') || exit 1
dir=$(mktemp -d "${TMPDIR:-/tmp}/ccr-desktop.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "desktop app ignored SIGTERM for 10 s; killing it"; kill -KILL "$pid"; }
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

# A throwaway HOME keeps autostart entries and window geometry off the machine.
HOME=$dir XDG_CONFIG_HOME=$dir/config XDG_DATA_HOME=$dir/share CROSSCHAT_SELFTEST=$dir/selftest.txt \
  "$BIN" --port "$port" --data-dir "$dir/data" >"$OUT/desktop.log" 2>&1 </dev/null &
pid=$!

health=no window=no text=no
t0=$(date +%s%N) end=$(( $(date +%s) + 60 ))
while [ "$(date +%s)" -lt "$end" ] && kill -0 "$pid" 2>/dev/null; do
  [ "$health" = yes ] || { curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/health" && health=yes; }
  [ "$window" = yes ] || { xwininfo -root -tree 2>/dev/null | grep -q '"Crosschat Relay' && window=yes; }
  [ "$text" = yes ] || { grep -qi 'crosschat' "$dir/selftest.txt" 2>/dev/null && text=yes; }
  [ "$health$window$text" = yesyesyes ] && break
  sleep 0.2
done
echo "after $(( ($(date +%s%N) - t0) / 1000000 )) ms: /health 200: $health, window mapped: $window, page text via binding: $text"
kill -0 "$pid" 2>/dev/null || echo "the app exited early"
cp "$dir/selftest.txt" "$OUT/desktop-selftest.txt" 2>/dev/null && { echo "--- page text"; head -n 15 "$OUT/desktop-selftest.txt"; }
rc=1
if [ "$health$window$text" = yesyesyes ]; then
  sleep 1 # let webkit finish painting
  import -window root "$OUT/desktop.png" && echo "screenshot: $OUT/desktop.png" && rc=0
fi
cleanup; pid=
echo "--- desktop.log (tail)"; tail -n 15 "$OUT/desktop.log"
exit "$rc"
