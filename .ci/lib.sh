# Shell helpers shared by the release checks (.ci/dist-check.sh, Linux
# packages; .ci/windows.sh, the Windows installer under wine), so neither
# carries a copy of the other's plumbing. Source it from the repository's
# root; it sets ROOT and DIST (build/dist), and start_checks the rest.

ROOT=$PWD
DIST=$ROOT/build/dist
PASS=0 FAIL=0 T0=$(date +%s)
_check_n=0

# start_checks NAME SUBDIR WHY: as root only (WHY says why), with a fresh
# log folder OUT=.ci/out/SUBDIR, no standard input, and the clock started.
start_checks() {
  NAME=$1 OUT=$ROOT/.ci/out/$2
  [ "$(id -u)" -eq 0 ] || { echo "$NAME: run as root ($3)"; exit 2; }
  rm -rf "$OUT"; mkdir -p "$OUT"
  export DEBIAN_FRONTEND=noninteractive
  exec </dev/null
  T0=$(date +%s)
}

ok()  { PASS=$((PASS+1)); echo "ok   $*"; }
bad() { FAIL=$((FAIL+1)); echo "FAIL $*"; }

# check NAME CMD...: run CMD (output in $OUT/check-N.log, its tail shown on
# failure) and count it.
check() {
  local name=$1 log rc; shift
  _check_n=$((_check_n+1)); log=$OUT/check-$_check_n.log
  "$@" >"$log" 2>&1; rc=$?
  if [ $rc -eq 0 ]; then ok "$name"; else bad "$name (exit $rc)"; sed 's/^/     /' "$log" | tail -n 25; fi
  return $rc
}

# finish: the summary line, and exit non-zero if anything failed.
finish() {
  echo
  echo "$NAME: $(( $(date +%s) - T0 )) s; logs in ${OUT#"${ROOT:-}/"}/"
  echo "$PASS passed, $FAIL failed"
  [ "$FAIL" -eq 0 ]
  exit
}
fatal() { bad "$*"; finish; }

# need_apt PKG...: install the Debian packages the machine lacks (as root;
# log in $OUT/apt.log). Returns non-zero, naming them, when that fails.
# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
need_apt() {
  apt_missing "$@" >>"$OUT/apt.log" 2>&1 && return 0
  echo "     could not install $* (see $OUT/apt.log)"
  return 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_health PORT [tries]: until GET /health on loopback answers 200 (0.2 s a try).
wait_health() {
  local i
  for i in $(seq "${2:-150}"); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health")" = 200 ] && return 0
    sleep 0.2
  done
  return 1
}

# wait_exit PID [tenths]: until PID ends (default 20 s), then its exit status; 124 if it did not.
wait_exit() {
  local i
  for i in $(seq "${2:-200}"); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$1" 2>/dev/null && return 124
  wait "$1"
}

# size_between FILE MIN_MB MAX_MB
size_between() {
  local b; b=$(stat -c %s "$1") || return 1
  echo "$1: $b bytes"
  [ "$b" -ge $(($2 * 1048576)) ] && [ "$b" -le $(($3 * 1048576)) ]
}

# pe_version FILE: the ProductVersion in a PE file's version resource
# (X.Y.Z, as build/dist.sh stamps it); fails when there is none.
pe_version() {
  strings -el "$1" | grep -A1 -x ProductVersion | tail -n1 | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$'
}

# pe_system_dlls_only FILE: the DLLs a PE file imports, failing on any that
# is not a Windows system DLL (the mingw runtime must be linked statically).
pe_system_dlls_only() {
  command -v x86_64-w64-mingw32-objdump >/dev/null || { echo "no x86_64-w64-mingw32-objdump"; return 1; }
  x86_64-w64-mingw32-objdump -p "$1" | awk '/DLL Name/ {print $3}' | tee /dev/stderr \
    | grep -viqE '^(kernel32|msvcrt|user32|advapi32|ws2_32|ole32|shell32|ntdll)\.dll$' && { echo "unexpected DLL"; return 1; }
  return 0
}

# bridge PORT TOKEN METHOD JSON_ARGS: call a bound service method over the
# relay's /bridge with the admin token; prints the JSON answer.
bridge() {
  curl -sf --max-time 30 -X POST "http://127.0.0.1:$1/bridge/$3" -H "Authorization: Bearer $2" \
    -H 'Content-Type: application/json' -d "$4"
}

# jq_py EXPR: evaluate a Python expression over the JSON on stdin (as j) and print it.
jq_py() { python3 -c 'import json,sys; j=json.load(sys.stdin); v=eval(sys.argv[1]); print(v if not isinstance(v,(dict,list)) else json.dumps(v))' "$1"; }
