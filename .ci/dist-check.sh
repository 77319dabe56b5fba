#!/usr/bin/env bash
# The release packages, checked for real on this machine (Debian 12, as root):
#
#   1. builds them with build/dist.sh (or, with --no-build, takes build/dist/),
#   2. installs the .deb with apt-get, runs the installed binary (`serve` as an
#      unprivileged user with its default per-user data dir; the window under
#      Xvfb), upgrades it with a newer .deb, removes and purges it, and checks
#      that the data (relay.db, api-token, the tasks) survives every step,
#   3. shows that a database from a newer schema is refused with a clear
#      message and left untouched, and runs the store's migration tests
#      (internal/store: TestMigrateVersion1InPlace, TestNextSchemaVersionRefused,
#      TestNewerSchemaRefusedAndUntouched) rather than repeating them,
#   4. inspects the .rpm (rpm -qp), the tarballs, the Windows installer and the
#      crosschat-relay.exe inside it (file, size, DLL imports, version resource),
#   5. runs the headless binary the way build/docker/Dockerfile does (env only,
#      non-root, no home directory), since no Docker engine runs here.
#
# usage: .ci/dist-check.sh [--no-build] [--skip-windows]
# Output: "ok"/"FAIL" lines and a final "N passed, N failed"; exit status is
# non-zero on failure. Logs in .ci/out/dist/. The machine is left as found:
# the package is purged at the end and temporary users' files removed.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
. .ci/lib.sh
BUILD=yes SKIP_WINDOWS=no
for a in "$@"; do
  case $a in
    --no-build) BUILD=no ;;
    --skip-windows) SKIP_WINDOWS=yes ;;
    *) echo "usage: $0 [--no-build] [--skip-windows]" >&2; exit 2 ;;
  esac
done
start_checks dist-check dist "it installs the .deb with apt-get"
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300)

# Tools the checks use (Debian 12 names); installed when missing.
TOOLS=(xvfb xauth x11-utils imagemagick python3 curl file iproute2 binutils util-linux rpm)
[ $SKIP_WINDOWS = yes ] || TOOLS+=(7zip binutils-mingw-w64-x86-64)
need_apt "${TOOLS[@]}" || echo "     note: the checks needing them fall back or fail"
WORK=$(mktemp -d /tmp/crosschat-dist-check.XXXXXX)
chmod 755 "$WORK"
PIDS=()

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  if dpkg-query -W -f='${Status}' crosschat-relay 2>/dev/null | grep -q 'install ok'; then
    "${APT[@]}" purge crosschat-relay >/dev/null 2>&1
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- 1. build --------------------------------------------------------------------
if [ $BUILD = yes ]; then
  args=(); [ $SKIP_WINDOWS = yes ] && args+=(--skip-windows)
  t=$(date +%s)
  if bash build/dist.sh "${args[@]}" >"$OUT/dist.log" 2>&1; then
    ok "build/dist.sh ($(( $(date +%s) - t )) s)"
    sed -n '/^artifacts in/,$p' "$OUT/dist.log"
  else
    tail -n 40 "$OUT/dist.log"; fatal "build/dist.sh"
  fi
fi
shopt -s nullglob
debs=("$DIST"/crosschat-relay_*_amd64.deb); rpms=("$DIST"/crosschat-relay-*.x86_64.rpm)
tars=("$DIST"/crosschat-relay_*_linux_amd64.tar.gz); htars=("$DIST"/crosschat-relay-headless_*_linux_amd64.tar.gz)
setups=("$DIST"/crosschat-relay_*_windows_amd64_setup.exe)
shopt -u nullglob
[ ${#debs[@]} -eq 1 ] && [ ${#rpms[@]} -eq 1 ] && [ ${#tars[@]} -eq 1 ] && [ ${#htars[@]} -eq 1 ] \
  || fatal "exactly one .deb, .rpm, tar.gz and headless tar.gz in build/dist/ (run build/dist.sh)"
DEB=${debs[0]} RPM=${rpms[0]} TAR=${tars[0]} HTAR=${htars[0]}
ok "artifacts present: $(cd "$DIST" && ls -- *.deb *.rpm *.tar.gz *.exe 2>/dev/null | tr '\n' ' ')"
check "SHA256SUMS match" bash -c "cd '$DIST' && sha256sum -c SHA256SUMS"

PKGVER=$(dpkg-deb -f "$DEB" Version)
SHA=$(sed -n 's/.*[.~+]g\([0-9a-f]\{7,\}\).*/\1/p' <<<"$PKGVER")
echo "     package version $PKGVER"

# --- 2. the .deb -----------------------------------------------------------------
check ".deb declares the GTK/WebKitGTK runtime (Depends: $(dpkg-deb -f "$DEB" Depends))" \
  bash -c "dpkg-deb -f '$DEB' Depends | grep -q 'libgtk-3-0' && dpkg-deb -f '$DEB' Depends | grep -q 'libwebkit2gtk-4.1-0'"
if dpkg-query -W -f='${Status}' crosschat-relay 2>/dev/null | grep -q 'install ok'; then
  echo "     note: crosschat-relay was installed before the check; it is replaced and purged at the end"
fi
check "apt-get install ./$(basename "$DEB")" "${APT[@]}" install "$DEB" || fatal "cannot install the .deb"
check "installed files: /usr/bin/crosschat-relay, .desktop entry, hicolor icons" bash -c '
  set -e
  test -x /usr/bin/crosschat-relay
  test -f /usr/share/applications/crosschat-relay.desktop
  grep -q "^Exec=crosschat-relay" /usr/share/applications/crosschat-relay.desktop
  grep -q "^Icon=crosschat-relay" /usr/share/applications/crosschat-relay.desktop
  for s in 16 24 32 48 64 128 256 512; do
    f=/usr/share/icons/hicolor/${s}x${s}/apps/crosschat-relay.png
    identify -format "%w" "$f" 2>/dev/null | grep -qx "$s" || { file "$f" | grep -q "$s x $s"; }
  done
  if command -v desktop-file-validate >/dev/null; then desktop-file-validate /usr/share/applications/crosschat-relay.desktop; fi'
INSTALLED_VERSION=$(/usr/bin/crosschat-relay version 2>&1 | head -n1)
echo "     crosschat-relay version: $INSTALLED_VERSION"
check "crosschat-relay version is stamped from git${SHA:+ (g$SHA)}" \
  bash -c "[ -n '$INSTALLED_VERSION' ] && ! grep -q '0.1.0-dev' <<<'$INSTALLED_VERSION' && { [ -z '$SHA' ] || grep -q '$SHA' <<<'$INSTALLED_VERSION'; }"

# serve as an unprivileged user (nobody), with the default per-user data dir
# under a throwaway home: ~/.local/share/crosschat-relay.
UHOME=$WORK/home
mkdir -p "$UHOME"; chown 65534:65534 "$UHOME"
DATA=$UHOME/.local/share/crosschat-relay
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- \
  env -u DISPLAY -u XDG_DATA_HOME -u XDG_CONFIG_HOME -u CROSSCHAT_DATA_DIR -u CROSSCHAT_API_TOKEN HOME="$UHOME" "$@"; }
PORT=$(free_port)
TITLE="Package the relay $$"

serve_start() { # LOG
  as_user /usr/bin/crosschat-relay serve --port "$PORT" >"$OUT/$1" 2>&1 &
  SERVE_PID=$!; PIDS+=("$SERVE_PID")
  wait_health "$PORT"
}
serve_stop() {
  as_user /usr/bin/crosschat-relay quit --port "$PORT" && wait_exit "$SERVE_PID"
}
# serve_cycle LOG [token]: start serve, the task is listed (and the token
# unchanged), stop it.
serve_cycle() {
  local r=0
  serve_start "$1" || { tail -n 20 "$OUT/$1"; return 1; }
  task_listed || r=1
  if [ "${2:-}" = token ]; then [ "$(sha256sum "$DATA/api-token" | cut -d' ' -f1)" = "$TOKEN_SUM" ] || { echo "api-token changed"; r=1; }; fi
  serve_stop || r=1
  return $r
}
task_listed() { # the task posted before is listed by the CLI
  as_user /usr/bin/crosschat-relay tasks list --port "$PORT" --json | tee "$OUT/tasks.json" | grep -q "$TITLE"
}

check "installed 'serve' as user nobody: /health 200 (default data dir ~/.local/share/crosschat-relay)" serve_start serve-1.log \
  || { tail -n 20 "$OUT/serve-1.log"; fatal "serve did not start"; }
post_task() (
  set -e
  as_user /usr/bin/crosschat-relay agents add pkg-bot --name "Package Bot" --model test --capability text-output --port "$PORT"
  local token; token=$(as_user /usr/bin/crosschat-relay token)
  bridge "$PORT" "$token" Tasks.Post "[{\"recipientSlug\":\"pkg-bot\",\"title\":\"$TITLE\",\"instructions\":\"Check that upgrades keep me.\"}]"
  echo
  task_listed
)
check "agent added with the CLI, task posted, listed with 'tasks list'" post_task
check "'crosschat-relay quit' stops serve (exit 0)" serve_stop
check "the data dir holds relay.db and api-token, owned by the user" \
  bash -c "test -s '$DATA/relay.db' && test -s '$DATA/api-token' && [ \"\$(stat -c %u '$DATA/relay.db')\" = 65534 ]"
TOKEN_SUM=$(sha256sum "$DATA/api-token" | cut -d' ' -f1)

# The window: the installed desktop app under Xvfb (root, throwaway home).
window_check() {
  local whome=$WORK/window wport log=$OUT/window.log pid i mapped=""
  mkdir -p "$whome"; wport=$(free_port)
  # CROSSCHAT_SELFTEST: the app writes the page's text to this file (app/selftest.go).
  HOME=$whome XDG_CONFIG_HOME=$whome/.config XDG_DATA_HOME=$whome/.local/share CROSSCHAT_SELFTEST=$whome/page.txt \
    /usr/bin/crosschat-relay --port "$wport" >"$log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  wait_health "$wport" || { echo "no /health from the window app's relay"; tail -n 20 "$log"; return 1; }
  echo "/health 200 on $wport"
  for i in $(seq 100); do
    xwininfo -root -tree 2>/dev/null | grep -q '"Crosschat Relay' && { mapped=1; break; }
    sleep 0.1
  done
  xwininfo -root -tree | grep 'Crosschat Relay' | head -n 3
  [ -n "$mapped" ] || { echo "no window titled Crosschat Relay"; return 1; }
  for i in $(seq 150); do [ -s "$whome/page.txt" ] && break; sleep 0.2; done
  [ -s "$whome/page.txt" ] || { echo "the page in the window never rendered (no self-test report)"; return 1; }
  cp "$whome/page.txt" "$OUT/window-page.txt"; echo "page text: $(head -c 200 "$whome/page.txt" | tr '\n' ' ')"
  sleep 2 # let WebKit paint before the screenshot
  import -window root "$OUT/window.png" 2>/dev/null || true
  HOME=$whome XDG_DATA_HOME=$whome/.local/share /usr/bin/crosschat-relay quit --port "$wport" || return 1
  wait_exit "$pid" || { echo "the window app did not exit cleanly"; return 1; }
  test -s "$whome/.local/share/crosschat-relay/relay.db"
}
if command -v xvfb-run >/dev/null && command -v xwininfo >/dev/null; then
  check "installed window app under Xvfb: relay /health 200, window mapped, page rendered, 'quit' exits 0 (screenshot .ci/out/dist/window.png)" \
    timeout 120 xvfb-run -a -s "-screen 0 1280x860x24" bash -c "$(declare -f window_check wait_health wait_exit free_port); WORK='$WORK' OUT='$OUT'; PIDS=(); window_check"
else
  bad "window check: xvfb-run/xwininfo missing (apt-get install xvfb xauth x11-utils)"
fi

# Upgrade: a newer .deb (same binary, higher version) installed over this one.
make_newer_deb() (
  set -e
  local d=$WORK/newer
  mkdir -p "$d/build/linux/pkgroot"
  cp -r "$ROOT/build/linux/." "$d/build/linux/"
  cp "$ROOT/LICENSE" "$d/"
  dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/bin/crosschat-relay >"$d/build/linux/pkgroot/crosschat-relay"
  chmod 755 "$d/build/linux/pkgroot/crosschat-relay"
  local ver=${PKGVER%-*}
  (cd "$d" && PKG_VERSION="$ver+upgradetest" "$ROOT/.ci/bin/nfpm" package -f build/linux/nfpm.yaml -p deb -t "$WORK/")
  ls "$WORK"/*upgradetest*.deb
)
check "a newer .deb (version +upgradetest) is made with nfpm" make_newer_deb
NEWER=$(ls "$WORK"/*upgradetest*_amd64.deb 2>/dev/null | head -n1)
upgrade() {
  "${APT[@]}" install "$NEWER" | tee "$OUT/upgrade-apt.log"
  grep -q 'over (' "$OUT/upgrade-apt.log"   # dpkg: "Preparing to unpack ... over (<old version>)"
  dpkg-query -W -f='${Version}\n' crosschat-relay | grep -q upgradetest
}
check "upgrade: apt-get install the newer .deb over the installed one" upgrade
check "after the upgrade: serve starts, the task is still there" serve_cycle serve-2.log
check "after the upgrade: the api-token is unchanged" bash -c "[ \"\$(sha256sum '$DATA/api-token' | cut -d' ' -f1)\" = '$TOKEN_SUM' ]"

# Remove: the program goes, the data stays.
check "apt-get remove crosschat-relay" "${APT[@]}" remove crosschat-relay
check "after remove: /usr/bin/crosschat-relay gone, data dir still has relay.db and api-token" \
  bash -c "! test -e /usr/bin/crosschat-relay && ! test -e /usr/share/applications/crosschat-relay.desktop && test -s '$DATA/relay.db' && test -s '$DATA/api-token'"

# Reinstall the release .deb after removal: the same data opens.
check "reinstall: apt-get install ./$(basename "$DEB")" "${APT[@]}" install "$DEB"
check "after reinstall: serve starts, the task and the token are still there" serve_cycle serve-3.log token

# --- 3. schema versions ------------------------------------------------------------
# A database written by a newer build (user_version beyond this build's) must
# be refused, clearly, without being modified.
newer_refused() {
  local d=$WORK/newerdb before after rc
  mkdir -p "$d"; cp "$DATA/relay.db" "$DATA/api-token" "$d/"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version=99'); c.commit(); c.close()" "$d/relay.db"
  before=$(sha256sum "$d/relay.db")
  env -u DISPLAY timeout 20 /usr/bin/crosschat-relay serve --port "$(free_port)" --data-dir "$d" >"$OUT/newer.log" 2>&1; rc=$?
  after=$(sha256sum "$d/relay.db")
  cat "$OUT/newer.log"
  echo "exit $rc"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'newer than the version' "$OUT/newer.log" && [ "$before" = "$after" ]
}
check "installed binary refuses a newer database (schema 99) with a clear message, file unchanged" newer_refused
if command -v go >/dev/null; then
  check "schema migration tests (internal/store: v1 data migrates to the current schema; newer refused)" \
    go test -count=1 -run '^(TestMigrateVersion1InPlace|TestNextSchemaVersionRefused|TestNewerSchemaRefusedAndUntouched)$' ./internal/store
fi

check "apt-get purge crosschat-relay: the data dir is still there" \
  bash -c "$(printf '%q ' "${APT[@]}") purge crosschat-relay && ! dpkg-query -W -f='\${Status}' crosschat-relay 2>/dev/null | grep -q 'install ok' && test -s '$DATA/relay.db'"

# --- 4. the other artifacts ----------------------------------------------------------
if command -v rpm >/dev/null; then
  check "rpm -qpi/-qpR/-qpl: $(basename "$RPM") (requires gtk3, webkit2gtk4.1)" bash -c "
    set -e; rpm -qpi '$RPM'; rpm -qpR '$RPM' | tee /dev/stderr | grep -qx gtk3; rpm -qpR '$RPM' | grep -qx webkit2gtk4.1
    rpm -qpl '$RPM' | grep -qx /usr/bin/crosschat-relay; rpm -qpl '$RPM' | grep -qx /usr/share/applications/crosschat-relay.desktop"
else
  check "rpm package (file; rpm not installable)" bash -c "file '$RPM' | grep -q 'RPM v3.0 bin'"
fi
check "desktop tar.gz: binary (x86-64 ELF), .desktop, icons" bash -c "
  set -e; tar -tzf '$TAR' | tee /dev/stderr | grep -q '/crosschat-relay\$'
  tar -tzf '$TAR' | grep -q 'share/applications/crosschat-relay.desktop'
  tar -tzf '$TAR' | grep -q 'share/icons/hicolor/256x256/apps/crosschat-relay.png'"
headless_check() (
  set -e
  mkdir -p "$WORK/headless"; tar -xzf "$HTAR" -C "$WORK/headless" --strip-components=1
  local b=$WORK/headless/crosschat-relay
  file "$b" | grep -q 'ELF 64-bit.*x86-64'
  if readelf -d "$b" | grep -E 'NEEDED' | tee /dev/stderr | grep -Eq 'gtk|webkit|soup|javascriptcore'; then echo "links window libraries"; return 1; fi
  "$b" version
)
check "headless tar.gz: links no GTK/WebKit, runs 'version'" headless_check

# The Dockerfile's runtime, minus Docker: env-only configuration, a non-root
# user without a home, the data dir from CROSSCHAT_DATA_DIR, listening on all
# interfaces, and its HEALTHCHECK command.
docker_like() {
  local d=$WORK/docker-data p pid rc
  mkdir -p "$d"; chown 65534:65534 "$d"; p=$(free_port)
  setpriv --reuid=65534 --regid=65534 --clear-groups -- env -i PATH=/usr/bin:/bin HOME=/nonexistent \
    CROSSCHAT_DATA_DIR="$d" CROSSCHAT_HOST=0.0.0.0 CROSSCHAT_PORT="$p" CROSSCHAT_ALLOWED_HOSTS=localhost,127.0.0.1 \
    "$WORK/headless/crosschat-relay" serve >"$OUT/docker-like.log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  wait_health "$p" || { cat "$OUT/docker-like.log"; return 1; }
  curl -fsS "http://127.0.0.1:$p/health"; echo   # the HEALTHCHECK command
  ss -ltn | grep -q "0.0.0.0:$p\|\*:$p" || { echo "not listening on all interfaces"; return 1; }
  test -s "$d/relay.db"
  kill -TERM "$pid"; wait_exit "$pid"; rc=$?
  echo "exit after SIGTERM: $rc"
  [ "$rc" -eq 0 ]
}
check "headless binary as the container runs it (env only, uid 65534, CROSSCHAT_HOST=0.0.0.0): /health, SIGTERM exit 0" docker_like

if [ $SKIP_WINDOWS = no ]; then
  if [ ${#setups[@]} -ne 1 ]; then
    bad "Windows installer missing from build/dist/"
  else
    SETUP=${setups[0]}
    check "Windows installer: PE executable, Nullsoft installer, 3-40 MB" bash -c "
      file '$SETUP' | tee /dev/stderr | grep -q 'PE32 executable (GUI).*Nullsoft Installer'; $(declare -f size_between); size_between '$SETUP' 3 40"
    inner_exe() (
      set -e
      local x=$WORK/nsis
      mkdir -p "$x"; 7zz x -y -o"$x" "$SETUP" >/dev/null
      find "$x" -type f | sed "s|$x/||" | sort
      test -f "$x/uninstall.exe"
      local exe=$x/crosschat-relay.exe
      file "$exe" | tee /dev/stderr | grep -q 'PE32+ executable (GUI) x86-64'
      size_between "$exe" 8 60
      if [ -f "$DIST/check/crosschat-relay.exe" ]; then cmp "$exe" "$DIST/check/crosschat-relay.exe"; fi
      pe_system_dlls_only "$exe"
      pe_version "$exe"
    )
    if command -v 7zz >/dev/null; then
      check "crosschat-relay.exe inside the installer: PE32+ GUI x86-64, 8-60 MB, system DLLs only, version resource; uninstall.exe present" inner_exe
    else
      check "crosschat-relay.exe (build/dist/check; 7zz not installable): PE32+ GUI x86-64" bash -c "
        file '$DIST/check/crosschat-relay.exe' | grep -q 'PE32+ executable (GUI) x86-64'"
    fi
  fi
fi

finish
