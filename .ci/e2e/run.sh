#!/usr/bin/env bash
# End-to-end checks of a relay binary with real MCP clients.
#
#   .ci/e2e/run.sh <relay-binary>
#
# Starts `<bin> serve` on a free loopback port with a throwaway data dir, waits
# for /health, enrolls two agents (alice, bob) through an invite and
# POST /api/enroll, then runs the MCP Inspector CLI checks (inspector.mjs) and
# the TypeScript SDK task round trip (sdk-flow.mjs). Builds nothing. Needs
# node_modules here (npm ci). Logs go to $E2E_OUT (default .ci/out/e2e).
# Ends with "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 <relay-binary>" >&2; exit 2; }
BIN=$(realpath "$1" 2>/dev/null) && [ -x "$BIN" ] || { echo "FAIL setup: relay binary '$1' not found or not executable" >&2; exit 2; }
[ -x "$HERE/node_modules/.bin/mcp-inspector" ] || { echo "FAIL setup: run 'npm ci' in $HERE first" >&2; exit 2; }
OUT=${E2E_OUT:-$ROOT/.ci/out/e2e}
mkdir -p "$OUT"

PASS=0 FAIL=0
ok()   { PASS=$((PASS+1)); echo "ok   $*"; }
bad()  { FAIL=$((FAIL+1)); echo "FAIL $*"; }
summary() { echo "e2e: $PASS passed, $FAIL failed"; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccr-e2e.XXXXXX")
DATA=$TMP/data
PID=
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$PID" 2>/dev/null; then echo "relay did not stop within 10 s of SIGTERM; killing it"; kill -KILL "$PID" 2>/dev/null; fi
    wait "$PID" 2>/dev/null
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# abort: a setup step failed, so nothing after it can run.
abort() { bad "$*"; echo "--- relay log (tail) ---"; tail -n 40 "$OUT/relay.log" 2>/dev/null; summary; exit 1; }

# A free loopback port: bind :0, read it, release it.
PORT=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})') \
  || abort "pick a free port"
BASE=http://127.0.0.1:$PORT

"$BIN" serve --port "$PORT" --data-dir "$DATA" >"$OUT/relay.log" 2>&1 </dev/null &
PID=$!

# Wait for GET /health with a 30 s deadline, failing early if the relay exits.
started=$(date +%s%N)
end=$(( $(date +%s) + 30 ))
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$BASE/health")" = 200 ]; do
  kill -0 "$PID" 2>/dev/null || { wait "$PID"; abort "relay exited (status $?) before /health answered"; }
  [ "$(date +%s)" -lt "$end" ] || abort "GET /health not 200 within 30 s"
  sleep 0.1
done
ok "relay serving on port $PORT; /health 200 after $(( ($(date +%s%N) - started) / 1000000 )) ms"

ADMIN=$("$BIN" token --data-dir "$DATA" 2>"$OUT/token.err") && [ -n "$ADMIN" ] \
  || abort "'token --data-dir' printed no admin token: $(cat "$OUT/token.err")"
ok "admin token read with 'token'"

"$BIN" invites create --uses 2 --expires 1h --json --port "$PORT" --data-dir "$DATA" >"$OUT/invite.json" 2>"$OUT/invite.err" \
  || abort "'invites create' failed: $(cat "$OUT/invite.err")"
CODE=$(node -e 'const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
  if(!/^cci_/.test(j.code??"")||!j.invite||typeof j.message!=="string")throw new Error("bad invite JSON");
  console.log(j.code)' "$OUT/invite.json" 2>"$OUT/invite.err") \
  || abort "'invites create --json' output is not {invite, code: cci_…, message}: $(head -c 400 "$OUT/invite.json")"
ok "invite created (uses 2, expires 1h)"

# enroll SLUG NAME: POST /api/enroll; writes $OUT/enroll-SLUG.json and prints the HTTP status.
enroll() {
  local body
  body=$(node -e 'console.log(JSON.stringify({invite:process.argv[1],slug:process.argv[2],displayName:process.argv[3],
    modelSlug:"e2e-script",capabilities:["text-input","text-output"]}))' "$CODE" "$1" "$2")
  curl -s -o "$OUT/enroll-$1.json" -w '%{http_code}' --max-time 10 -X POST "$BASE/api/enroll" \
    -H 'Content-Type: application/json' --data-binary "$body"
}
# field FILE EXPR: evaluate a JS expression over the JSON in FILE (as j).
field() { node -e 'const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));const v=('"$2"');if(v===undefined||v===null||v==="")process.exit(1);console.log(v)' "$1"; }

for who in alice:Alice bob:Bob; do
  slug=${who%%:*}
  status=$(enroll "$slug" "${who#*:}")
  [ "$status" = 201 ] || abort "enroll $slug: HTTP $status, want 201: $(head -c 400 "$OUT/enroll-$slug.json")"
  tok=$(field "$OUT/enroll-$slug.json" 'j.token') && [[ $tok == cca_* ]] || abort "enroll $slug: no cca_ token in the response"
  field "$OUT/enroll-$slug.json" 'j.agent && j.agent.slug' | grep -qx "$slug" || abort "enroll $slug: agent.slug is not $slug"
  field "$OUT/enroll-$slug.json" 'j.setup && Array.isArray(j.next) && j.next.length>0 && "y"' >/dev/null \
    || abort "enroll $slug: response lacks setup or a non-empty next[]"
  declare "TOKEN_$slug=$tok"
  ok "enrolled $slug (201, cca_ token)"
done
MCP_URL=$(field "$OUT/enroll-alice.json" 'j.mcpUrl') || abort "enroll: no mcpUrl"
[ "$MCP_URL" = "$BASE/mcp" ] && ok "mcpUrl is $MCP_URL" || bad "mcpUrl is '$MCP_URL', want $BASE/mcp"

status=$(enroll carol Carol)
[ "$status" = 403 ] && field "$OUT/enroll-carol.json" 'j.error' | grep -qx invalid_invite \
  && ok "a third enrollment on a 2-use invite is refused (403 invalid_invite)" \
  || bad "third enrollment on a 2-use invite: HTTP $status $(head -c 300 "$OUT/enroll-carol.json"), want 403 invalid_invite"

export MCP_URL ALICE_TOKEN=$TOKEN_alice BOB_TOKEN=$TOKEN_bob

# run_node NAME SCRIPT: a client script counts as one check here; its own lines show the detail.
run_node() {
  local name=$1; shift
  echo "--- $name"
  if node "$@" 2>&1 | tee "$OUT/$name.log" | sed 's/^/  /'; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    ok "$name"
  else
    bad "$name (see $OUT/$name.log)"
  fi
}
run_node inspector "$HERE/inspector.mjs"
run_node sdk-flow "$HERE/sdk-flow.mjs"

kill -0 "$PID" 2>/dev/null && ok "relay still running after the clients" || bad "relay died during the run"
summary
[ "$FAIL" -eq 0 ]
