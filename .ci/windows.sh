#!/usr/bin/env bash
# The Windows build, run for real under wine (Debian 12's wine 8.0), as root:
#
#   1. installs wine (wine wine64 wine32:i386; the 32-bit part runs the NSIS
#      installer's stub), makes a fresh prefix set to Windows 10 (the
#      installer refuses older versions) and puts the ProcessPrng stand-in
#      (build/windows/wine/processprng.c) into its system32: Go 1.24+ programs
#      need it and wine 8.0 lacks it,
#   2. cross-compiles the test binaries of the packages with Windows-only code
#      (GOOS=windows, mingw cgo) once, vets every package for Windows (make
#      vet-windows), and runs the test binaries under wine; a test that cannot
#      run there skips itself with the reason, printed here,
#   3. checks the release installer build/dist.sh made (build/dist/*_setup.exe):
#      silent install, Start-menu entry, uninstall registry entry, version
#      resource; the installed exe's `version`, `serve` on a data folder
#      under C:\ with spaces, a task's whole MCP round trip from Linux
#      (.ci/e2e/sdk-flow.mjs), `status` exit codes, `quit`; `autostart` in
#      the registry; a worker running a .cmd to completion and one that
#      overruns its time limit killed with its whole tree; an upgrade by a
#      newer installer keeping data, token and tasks; the silent uninstaller.
#
# usage: .ci/windows.sh [--unit-only | --installer-only] [--dist DIR]
# Output: "ok"/"FAIL" lines and a final "N passed, N failed"; exit status is
# non-zero on failure. Logs in .ci/out/windows/. The prefix lives in a
# temporary folder, removed at the end with every wine process (wineserver -k).
# Needs Go and node (for the MCP client); the WebView2 window itself cannot
# run under wine and is not checked.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
. .ci/lib.sh
UNIT=yes INSTALLER=yes
while [ $# -gt 0 ]; do
  case $1 in
    --unit-only) INSTALLER=no ;;
    --installer-only) UNIT=no ;;
    --dist) DIST=$(realpath "$2"); shift ;;
    *) echo "usage: $0 [--unit-only | --installer-only] [--dist DIR]" >&2; exit 2 ;;
  esac
  shift
done
start_checks windows windows "it installs wine with apt-get"

WORK=$(mktemp -d /tmp/crosschat-windows.XXXXXX)
# No display: the silent installer, the CLI and `serve` need none, and wine
# must not try to install Mono or Gecko (mscoree, mshtml) into the prefix.
unset DISPLAY WAYLAND_DISPLAY
export WINEPREFIX=$WORK/prefix WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  command -v wineserver >/dev/null && wineserver -k 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. wine and a fresh prefix ------------------------------------------------------
t=$(date +%s)
dpkg --print-foreign-architectures | grep -qx i386 || dpkg --add-architecture i386
need_apt wine wine64 wine32:i386 gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 nsis binutils file curl python3 \
  || fatal "apt-get install wine wine64 wine32:i386 (see .ci/out/windows/apt.log)"
ok "wine installed: $(wine --version) ($(( $(date +%s) - t )) s)"

make_prefix() (
  set -e
  wineboot -i
  wine winecfg -v win10
  wineserver -w
  # Windows has bcryptprimitives.dll; wine 8.0 does not: see the C file.
  x86_64-w64-mingw32-gcc -shared -O2 -o "$WORK/bcryptprimitives.dll" build/windows/wine/processprng.c -ladvapi32
  cp "$WORK/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"
  wine reg query 'HKLM\Software\Microsoft\Windows NT\CurrentVersion' /v CurrentBuildNumber
)
t=$(date +%s)
check "fresh wine prefix as Windows 10, ProcessPrng stand-in in system32" make_prefix || fatal "no wine prefix"
echo "     prefix made in $(( $(date +%s) - t )) s"

# --- 2. Windows unit tests under wine ------------------------------------------------
# Packages with Windows-only code: the desktop integration (autostart in the
# registry, notifications, open/reveal), the worker's process trees (job
# objects), the session turn locks, the configuration and data-folder rules,
# the project store and its lock.
UNIT_PKGS=(./internal/desktop ./internal/worker ./internal/session ./internal/config ./internal/filelock ./internal/project ./app ./app/cli)
# Only these tests of app and app/cli (the rest need a desktop session or run
# the relay end to end, which the installer checks below do on the real exe).
APP_RUN='^TestDataDir'
CLI_RUN='^TestSystemServiceAccount$'

# Go 1.26's os.RemoveAll deletes with FileDispositionInformationEx, which
# wine 8.0 does not implement (every Windows 10 1607+ does), so t.TempDir's
# cleanup would fail every test. Test binaries only: an overlay file per
# package switches the standard library to its own documented fallback.
wine_overlay() {
  local d name f first=1
  mkdir -p "$WORK/overlay"
  printf '{"Replace":{' >"$WORK/overlay.json"
  for d in "${UNIT_PKGS[@]}"; do
    name=$(go list -f '{{.Name}}' "$d") || return 1
    f=$WORK/overlay/$name.go
    printf 'package %s\n\nimport _ "unsafe"\n\n// Test binaries under wine only (.ci/windows.sh).\n//\n//go:linkname wineDeleteatFallback internal/syscall/windows.TestDeleteatFallback\nvar wineDeleteatFallback bool\n\nfunc init() { wineDeleteatFallback = true }\n' "$name" >"$f"
    [ $first = 1 ] || printf ',' >>"$WORK/overlay.json"; first=0
    printf '"%s/%s/zz_wine_windows_test.go":"%s"' "$ROOT" "${d#./}" "$f" >>"$WORK/overlay.json"
  done
  printf '}}\n' >>"$WORK/overlay.json"
}

build_tests() {
  wine_overlay || return 1
  mkdir -p "$WORK/tests"
  GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc CXX=x86_64-w64-mingw32-g++ \
    go test -c -trimpath -overlay "$WORK/overlay.json" -ldflags=-checklinkname=0 -o "$WORK/tests/" "${UNIT_PKGS[@]}"
  ls -l "$WORK/tests"
}

# run_tests PKG: one test binary under wine, in its package folder (testdata);
# one check, with every skipped test and its reason printed.
run_tests() {
  local pkg=$1 name exe log rc args=(-test.count=1 -test.v -test.timeout=8m)
  name=$(basename "$pkg"); exe=$WORK/tests/$name.test.exe log=$OUT/unit-$name.log
  [ "$name" = app ] && args+=(-test.run "$APP_RUN")
  [ "$name" = cli ] && args+=(-test.run "$CLI_RUN")
  # CROSSCHAT_UNDER_WINE: tests skip what wine cannot do, and say so.
  (cd "$pkg" && CROSSCHAT_UNDER_WINE=1 timeout 600 wine "$exe" "${args[@]}") >"$log" 2>&1; rc=$?
  local passed skipped failed
  passed=$(grep -c -- '--- PASS' "$log"); skipped=$(grep -c -- '--- SKIP' "$log"); failed=$(grep -c -- '--- FAIL' "$log")
  if [ $rc -eq 0 ] && grep -q '^PASS$' "$log"; then
    ok "go test under wine: ${pkg#./} ($passed passed, $skipped skipped)"
  else
    bad "go test under wine: ${pkg#./} (exit $rc; $passed passed, $skipped skipped, $failed failed; log: .ci/out/windows/unit-$name.log)"
    grep -B2 -A12 -- '--- FAIL' "$log" | head -n 60 | sed 's/^/     /'
  fi
  # The skipped tests, each with the reason it gave (t.Skip's message).
  awk '/^=== (RUN|NAME|CONT|PAUSE)/ {cur=$3; next}
       /^ +[^ ].*_test\.go:[0-9]+:/ {sub(/^ +/, ""); m[cur]=m[cur] "          " $0 "\n"; next}
       /--- SKIP:/ {printf "     skip %s:\n%s", $3, m[$3]}' "$log"
}

if [ $UNIT = yes ]; then
  t=$(date +%s)
  if check "cross-compile the Windows test binaries (GOOS=windows, mingw cgo): ${UNIT_PKGS[*]}" build_tests; then
    echo "     compiled in $(( $(date +%s) - t )) s"
    t=$(date +%s)
    check "go vet ./... with GOOS=windows, mingw cgo and no cgo (make vet-windows)" make --no-print-directory vet-windows
    echo "     vetted in $(( $(date +%s) - t )) s"
    for p in "${UNIT_PKGS[@]}"; do run_tests "$p"; done
  fi
  echo "     unit tests under wine: $(( $(date +%s) - t )) s"
fi
[ $INSTALLER = yes ] || finish

# --- 3. the release installer -----------------------------------------------------------
shopt -s nullglob
setups=("$DIST"/crosschat-relay_*_windows_amd64_setup.exe)
shopt -u nullglob
[ ${#setups[@]} -eq 1 ] || fatal "exactly one Windows installer in $DIST (run build/dist.sh)"
SETUP=${setups[0]}
C=$WINEPREFIX/drive_c
INSTDIR=$C/Program\ Files/Crosschat/Crosschat\ Relay
EXE='C:\Program Files\Crosschat\Crosschat Relay\crosschat-relay.exe'
UNINST_KEY='HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\CrosschatCrosschat Relay'
RUN_KEY='HKCU\Software\Microsoft\Windows\CurrentVersion\Run'
DATAW='C:\Crosschat Data\relay data'
DATA=$C/Crosschat\ Data/relay\ data
WORKW='C:\Crosschat Work'
WDIR=$C/Crosschat\ Work
PORT=$(free_port)
ADMIN=

# relay ARGS...: the installed exe (a GUI-subsystem program; wine passes its
# standard streams through). --port and --data-dir go to every verb.
relay() { timeout 120 wine "$EXE" "$@"; }
at() { relay "$@" --port "$PORT" --data-dir "$DATAW"; }
reg64() { wine reg query "$@" /reg:64 | tr -d '\r'; [ "${PIPESTATUS[0]}" -eq 0 ]; }

install_setup() { # SETUP_EXE: silent install, timed
  local t0 rc
  t0=$(date +%s.%N)
  timeout 300 wine "$1" /S; rc=$?
  wineserver -w
  INSTALL_SECS=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")
  echo "setup.exe /S: exit $rc, $INSTALL_SECS s"
  [ $rc -eq 0 ] && test -f "$INSTDIR/crosschat-relay.exe"
}

installed() (
  set -e
  ls -l "$INSTDIR"
  test -f "$INSTDIR/uninstall.exe"
  find "$C" -name 'Crosschat Relay.lnk' | tee /dev/stderr | grep -q 'Start Menu/Programs/Crosschat Relay.lnk'
  reg64 "$UNINST_KEY" | tee "$OUT/uninstall-key.txt"
  grep -q 'DisplayName.*Crosschat Relay' "$OUT/uninstall-key.txt"
  grep -q 'QuietUninstallString.*uninstall.exe" /S' "$OUT/uninstall-key.txt"
  local v; v=$(pe_version "$INSTDIR/crosschat-relay.exe")
  echo "version resource: $v"
  grep -q "DisplayVersion *REG_SZ *$v\$" "$OUT/uninstall-key.txt"
)

check "silent install: setup.exe /S ($(basename "$SETUP"))" install_setup "$SETUP" || fatal "the installer did not install"
check "installed: Program Files\\Crosschat\\Crosschat Relay, Start-menu entry, uninstall entry in the registry, version resource = DisplayVersion" installed
INSTALLER_BYTES=$(stat -c %s "$SETUP")
INSTALLED_BYTES=$(du -sb "$INSTDIR" | cut -f1)

serve_start() { # LOG
  local t0; t0=$(date +%s.%N)
  wine "$EXE" serve --port "$PORT" --data-dir "$DATAW" >"$OUT/$1" 2>&1 &
  SERVE_PID=$!; PIDS+=("$SERVE_PID")
  wait_health "$PORT" 300 || { tail -n 20 "$OUT/$1"; return 1; }
  SERVE_SECS=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")
  curl -s "http://127.0.0.1:$PORT/health"; echo
}
serve_stop() {
  at quit && wait_exit "$SERVE_PID" 300
}

status_exit() { at status; local rc=$?; echo "exit $rc"; [ $rc -eq "$1" ]; }
# build/dist.sh stamps VERSION, else `git describe --tags --always --dirty` of
# this checkout: a tag, or a short commit that may start with a letter.
version_ok() {
  local want=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null)}
  [ -n "$want" ] && relay version | tr -d '\r' | tee /dev/stderr | grep -qxF "crosschat-relay $want"
}
check "installed exe: 'version' prints the version build/dist.sh stamped" version_ok
check "'status' with no relay running: exit 3" status_exit 3
check "'serve' with the data folder $DATAW (spaces; made by the relay): /health 200" serve_start serve-1.log || fatal "serve did not start"
SERVING=$(python3 -c "print(round($INSTALL_SECS+$SERVE_SECS,1))")
echo "     from setup.exe /S to a serving relay: $SERVING s (install $INSTALL_SECS s, then serve to /health 200 $SERVE_SECS s)"
ADMIN=$(at token) && [ -n "$ADMIN" ] || fatal "'token' printed no admin token"
check "the data folder holds relay.db and api-token" bash -c "test -s '$DATA/relay.db' && test -s '$DATA/api-token'"
check "'status' while serving: exit 0" status_exit 0

# Workers: a .cmd that answers, and a .cmd that starts a child and overruns
# its one-minute limit. The slow one is posted first, so its minute passes
# while the other checks run.
mkdir -p "$WDIR"
printf '@echo off\r\necho Answered on Windows by %%~nx0 in %%CD%%\r\n' >"$WDIR/answer.cmd"
printf '@echo off\r\nstart "" /b ping -n 611 127.0.0.1 >nul\r\nping -n 613 127.0.0.1 >nul\r\necho too late\r\n' >"$WDIR/slow.cmd"
worker_setup() { # SLUG SCRIPT
  at agents add "$1" --name "$1" --model script --capability text-output >/dev/null \
    && at workers set "$1" --harness custom --workdir "$WORKW" --command "$WORKW\\$2" --prompt file --arg '{prompt_file}' --timeout 1m
}
post() { # SLUG TITLE: prints the task id
  bridge "$PORT" "$ADMIN" Tasks.Post "[{\"recipientSlug\":\"$1\",\"title\":\"$2\",\"instructions\":\"Answer in one line.\"}]" | jq_py 'j["id"]'
}
task_status() { bridge "$PORT" "$ADMIN" Tasks.Get "[\"$1\"]" | jq_py 'j["task"]["status"]'; }
wait_task() { # ID STATUS TRIES(0.5 s): until the task has STATUS; fails at once on another final one
  local i s
  for i in $(seq "$3"); do
    s=$(task_status "$1")
    [ "$s" = "$2" ] && return 0
    case $s in blocked|completed|cancelled) break ;; esac
    sleep 0.5
  done
  echo "task $1 is $s, want $2:"
  bridge "$PORT" "$ADMIN" Tasks.Get "[\"$1\"]" | jq_py 'j["task"]["reports"]'
  return 1
}
SLOW_T0=$(date +%s)
check "worker with a custom .cmd that overruns its 1-minute limit: set up, task posted" \
  worker_setup slow-bot slow.cmd
SLOW_TASK=$(post slow-bot "Overrun the limit")
echo "     task $SLOW_TASK"

slow_running() {
  local i
  for i in $(seq 150); do
    pgrep -f 'ping(.exe)? -n 611 ' >/dev/null && pgrep -f 'ping(.exe)? -n 613 ' >/dev/null && break
    sleep 0.2
  done
  ps -eo pid,args | grep -E 'ping(.exe)? -n 61[13] ' | grep -v grep
  pgrep -f 'ping(.exe)? -n 611 ' >/dev/null && pgrep -f 'ping(.exe)? -n 613 ' >/dev/null
}
check "the overrunning .cmd runs: the script's ping and the child it started (start /b ping) are running" slow_running

check "worker with a custom .cmd: set up" \
  worker_setup cmd-bot answer.cmd
fast_task() {
  local id; id=$(post cmd-bot "Answer from a .cmd") || return 1
  wait_task "$id" completed 240 || return 1
  bridge "$PORT" "$ADMIN" Tasks.Get "[\"$id\"]" | tee "$OUT/cmd-task.json" | jq_py 'j["task"]["reports"][-1]["result"]' \
    | tee /dev/stderr | grep -q 'Answered on Windows by answer.cmd in C:\\Crosschat Work'
}
check "the .cmd worker ran a task to completion (its answer, run in C:\\Crosschat Work, is the result)" fast_task

# A task's whole life over MCP from the Linux side, with the TypeScript SDK.
mcp_flow() (
  set -e
  [ -d .ci/e2e/node_modules ] || (cd .ci/e2e && npm ci --no-audit --no-fund --loglevel=error)
  local a b
  a=$(at agents add alice --name Alice --model e2e --capability text-output --json | jq_py 'j["token"]')
  b=$(at agents add bob --name Bob --model e2e --capability text-output --json | jq_py 'j["token"]')
  MCP_URL=http://127.0.0.1:$PORT/mcp ALICE_TOKEN=$a BOB_TOKEN=$b node .ci/e2e/sdk-flow.mjs
)
check "a task's whole life over MCP against the Windows relay (.ci/e2e/sdk-flow.mjs: post, claim, progress, complete, updates)" mcp_flow

autostart() (
  set -e
  relay autostart enable
  reg64 "$RUN_KEY" /v "Crosschat Relay" | tee /dev/stderr | grep -qF '"C:\Program Files\Crosschat\Crosschat Relay\crosschat-relay.exe" --hidden'
  relay autostart status | tee /dev/stderr | grep -q 'starts (hidden) when you log in'
  relay autostart disable
  ! reg64 "$RUN_KEY" /v "Crosschat Relay"
  relay autostart status | tee /dev/stderr | grep -q 'does not start when you log in'
)
check "autostart enable|status|disable: the HKCU Run value written and removed" autostart

slow_killed() {
  local left
  left=$(( SLOW_T0 + 60 + 90 - $(date +%s) )); [ $left -gt 10 ] || left=10
  wait_task "$SLOW_TASK" blocked $((left * 2)) || return 1
  bridge "$PORT" "$ADMIN" Tasks.Get "[\"$SLOW_TASK\"]" | tee "$OUT/slow-task.json" | jq_py 'j["task"]["reports"][-1]["message"]' \
    | tee /dev/stderr | grep -q 'stopped this task after 1 minute without finishing' || return 1
  echo "blocked after $(( $(date +%s) - SLOW_T0 )) s"
  local i
  for i in $(seq 50); do
    pgrep -f 'ping(.exe)? -n 61[13] ' >/dev/null || break
    sleep 0.2
  done
  ps -eo pid,args | grep -E 'ping(.exe)? -n 61[13] |slow\.cmd' | grep -v grep && { echo "left running"; return 1; }
  return 0
}
check "the overrunning .cmd: the task is blocked after the limit, the script and the child it started (ping) are gone" slow_killed

TOKEN_SUM=$(sha256sum "$DATA/api-token" | cut -d' ' -f1)
TASKS_BEFORE=$(bridge "$PORT" "$ADMIN" Tasks.List '[{}]' | jq_py 'len(j)')
check "'quit' stops serve (exit 0)" serve_stop
check "'status' after quit: exit 3" status_exit 3

# Upgrade: the same NSIS script, built again with a higher version, run over this install.
newer_installer() (
  set -e
  # The layout wails builds in: build/windows/{installer/project.nsi,icon.ico},
  # and the installer goes to build/bin.
  local n=$WORK/nsis/build/windows v
  test -f "$DIST/check/nsis/installer/project.nsi" || { echo "no $DIST/check/nsis (build/dist.sh keeps it)"; exit 1; }
  mkdir -p "$n" "$WORK/nsis/build/bin"; cp -r "$DIST/check/nsis/." "$n/"
  # wails removes the WebView2 bootstrapper it embeds after the build: the
  # same file, from the wails module the app is built with.
  mkdir -p "$n/installer/tmp"
  cp "$(go list -m -f '{{.Dir}}' github.com/wailsapp/wails/v2)/internal/webview2runtime/MicrosoftEdgeWebview2Setup.exe" "$n/installer/tmp/"
  v=$(pe_version "$INSTDIR/crosschat-relay.exe")
  NEWER_VERSION=$(python3 -c "import sys; a=sys.argv[1].split('.'); a[2]=str(int(a[2])+1); print('.'.join(a))" "$v")
  (cd "$n/installer" && makensis -V2 -DARG_WAILS_AMD64_BINARY="$INSTDIR/crosschat-relay.exe" -DINFO_PRODUCTVERSION="$NEWER_VERSION" project.nsi)
  mv "$WORK"/nsis/build/bin/*-installer.exe "$WORK/newer-setup.exe"
  echo "$NEWER_VERSION" >"$WORK/newer-version"
)
upgrade() {
  install_setup "$WORK/newer-setup.exe" || return 1
  reg64 "$UNINST_KEY" | tee /dev/stderr | grep -q "DisplayVersion *REG_SZ *$(cat "$WORK/newer-version")\$"
}
after_upgrade() {
  serve_start serve-2.log || return 1
  [ "$(sha256sum "$DATA/api-token" | cut -d' ' -f1)" = "$TOKEN_SUM" ] || { echo "api-token changed"; return 1; }
  local n; n=$(bridge "$PORT" "$ADMIN" Tasks.List '[{}]' | jq_py 'len(j)')
  echo "tasks: $n (before: $TASKS_BEFORE)"
  [ "$n" = "$TASKS_BEFORE" ] && [ "$(task_status "$SLOW_TASK")" = blocked ] || return 1
  serve_stop
}
check "a newer installer (same NSIS script, version +1) is made with makensis" newer_installer
check "upgrade: the newer setup.exe /S over the installed one (DisplayVersion updated)" upgrade
check "after the upgrade: serve starts on the same data folder, api-token and tasks unchanged" after_upgrade

# Uninstall: the program, its entries and the Run value go; the data stays.
uninstall() {
  relay autostart enable || return 1
  # What the window app registers at start for its toasts (it cannot run
  # here: no WebView2), as internal/desktop.RegisterURLScheme writes it.
  wine reg add 'HKCU\Software\Classes\crosschat-relay\shell\open\command' /ve /d "\"$EXE\" \"%1\"" /f || return 1
  timeout 120 wine "$INSTDIR/uninstall.exe" /S || return 1
  # The uninstaller copies itself to %TEMP% and runs from there: wait for it.
  local i
  for i in $(seq 300); do [ -e "$INSTDIR/crosschat-relay.exe" ] || break; sleep 0.2; done
  wineserver -w
  ! test -e "$INSTDIR/crosschat-relay.exe" || { echo "the exe is still there"; return 1; }
  ! find "$C" -name 'Crosschat Relay.lnk' | grep . || { echo "a shortcut is still there"; return 1; }
  ! reg64 "$UNINST_KEY" >/dev/null 2>&1 || { echo "the uninstall entry is still there"; return 1; }
  ! reg64 "$RUN_KEY" /v "Crosschat Relay" || { echo "the Run value is still there"; return 1; }
  ! reg64 'HKCU\Software\Classes\crosschat-relay' || { echo "the crosschat-relay:// handler is still there"; return 1; }
  test -s "$DATA/relay.db" && test -s "$DATA/api-token"
}
check "silent uninstall: program, shortcuts, uninstall entry, Run value and crosschat-relay:// handler removed; the data folder kept" uninstall

echo
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1048576 }'; }
echo "     figures: installer $INSTALLER_BYTES bytes ($(mb "$INSTALLER_BYTES")); installed $INSTALLED_BYTES bytes ($(mb "$INSTALLED_BYTES"));"
echo "              setup.exe /S to a serving relay under wine: $SERVING s"
finish
