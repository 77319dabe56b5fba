#!/usr/bin/env bash
# Builds every release artifact this Linux machine can build, into build/dist/:
#
#   crosschat-relay_<pkgver>_amd64.deb              desktop app, Debian/Ubuntu (nfpm)
#   crosschat-relay-<pkgver>-1.x86_64.rpm           desktop app, Fedora/RHEL/openSUSE (nfpm)
#   crosschat-relay_<pkgver>_linux_amd64.tar.gz     desktop app for other distributions
#   crosschat-relay-headless_<pkgver>_linux_amd64.tar.gz
#                                                   `serve` for servers: no GTK/WebKit linked
#   crosschat-relay_<pkgver>_windows_amd64_setup.exe
#                                                   NSIS installer (wails, mingw-w64 for cgo)
#   SHA256SUMS
#
# macOS (.app, .dmg) cannot be built here; .github/workflows/release.yml
# builds it on a macOS runner.
#
# usage: build/dist.sh [--skip-windows]
#   VERSION=...      override the version stamped into the binaries (default:
#                    git describe --tags --always --dirty, else 0.1.0-dev)
#   PKG_VERSION=...  override the package version (default: derived, see below)
#
# The build runs in a snapshot of the working tree in a temporary directory
# (tracked and untracked, not ignored, files), so it never writes into the
# tree: wails.json's productVersion is stamped in the snapshot only, and the
# Windows resource file wails drops in the project root (*-res.syso) cannot
# reach a concurrent `go build` of the real tree. Only build/dist/ and the
# tools in .ci/bin (wails, nfpm) are written.
#
# Needs Go, node/npm, and on Debian 12: libgtk-3-dev libwebkit2gtk-4.1-dev
# pkg-config (desktop build), gcc-mingw-w64-x86-64 nsis (Windows). Missing apt
# packages are installed when run as root; otherwise the script says which.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
DIST=$ROOT/build/dist
BIN=$ROOT/.ci/bin
NFPM_VERSION=v2.45.2
SKIP_WINDOWS=no
for a in "$@"; do
  case $a in
    --skip-windows) SKIP_WINDOWS=yes ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dist: unknown argument $a (try --help)" >&2; exit 2 ;;
  esac
done

T0=$(date +%s)
step_t0=$T0
step() { local now; now=$(date +%s); echo "--- $* (+$((now - T0)) s)"; step_t0=$now; }
die() { echo "dist: $*" >&2; exit 1; }
export PATH=$BIN:$PATH

# --- versions --------------------------------------------------------------------
# VERSION: what `crosschat-relay version` prints (same rule as the Makefile).
# BASE:    X.Y.Z of the last v-tag, else wails.json's productVersion (the next
#          release), else 0.1.0. Windows version resources need this numeric form.
# PKG_VERSION (deb/rpm, file names), ordered so upgrades sort correctly:
#   on a tag vX.Y.Z, clean tree   X.Y.Z
#   N commits after tag vX.Y.Z    X.Y.Z+N.g<sha>     (after X.Y.Z)
#   no tag yet                    BASE~N.g<sha>      (before BASE; N = commit count)
#   uncommitted changes           ... .dirty appended
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)}
tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null || true)
sha=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""; git diff --quiet HEAD -- 2>/dev/null || dirty=.dirty
if [ -n "$tag" ]; then
  BASE=${tag#v}; BASE=${BASE%%-*}
  n=$(git rev-list --count "$tag"..HEAD)
  if [ "$n" -eq 0 ]; then DEFAULT_PKG=$BASE${dirty:++0${dirty}}; else DEFAULT_PKG=$BASE+$n.g$sha$dirty; fi
else
  BASE=$(sed -n 's/.*"productVersion": *"\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\)".*/\1/p' wails.json | head -n1)
  BASE=${BASE:-0.1.0}
  n=$(git rev-list --count HEAD 2>/dev/null || echo 0)
  DEFAULT_PKG=$BASE~$n.g$sha$dirty
fi
PKG_VERSION=${PKG_VERSION:-$DEFAULT_PKG}
[[ $BASE =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "numeric version $BASE is not X.Y.Z"
echo "version $VERSION; packages $PKG_VERSION; windows $BASE"

# --- tools -----------------------------------------------------------------------
step "tools"
need_apt=()
have_pkg() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed'; }
for p in libgtk-3-dev libwebkit2gtk-4.1-dev pkg-config gcc; do have_pkg "$p" || need_apt+=("$p"); done
if [ $SKIP_WINDOWS = no ]; then
  for p in gcc-mingw-w64-x86-64 nsis; do have_pkg "$p" || need_apt+=("$p"); done
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "installing: ${need_apt[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    die "missing system packages; run: sudo apt-get install ${need_apt[*]}"
  fi
fi
mkdir -p "$BIN"
if ! go version -m "$BIN/nfpm" 2>/dev/null | grep -q "github.com/goreleaser/nfpm/v2[[:space:]]*$NFPM_VERSION"; then
  echo "installing nfpm $NFPM_VERSION into .ci/bin"
  GOBIN=$BIN go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
fi
if [ $SKIP_WINDOWS = no ] && [ ! -x "$BIN/wails" ]; then
  echo "building the pinned wails CLI into .ci/bin"
  (cd build/tools/wails && go build -o "$BIN/wails" github.com/wailsapp/wails/v2/cmd/wails)
fi

# --- snapshot of the working tree ------------------------------------------------
step "snapshot"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/crosschat-dist.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
SRC=$STAGE/src
mkdir -p "$SRC"
git ls-files -z --cached --others --exclude-standard \
  | grep -zv -e '^build/dist/' -e '^build/bin/' \
  | (cd "$ROOT" && xargs -0 -r cp --parents -t "$SRC" 2>/dev/null || true)
[ -f "$SRC/go.mod" ] && [ -f "$SRC/main.go" ] || die "snapshot failed"
# Stamp the numeric version for Windows resources and the installer, in the snapshot only.
sed -i "s/\"productVersion\": *\"[^\"]*\"/\"productVersion\": \"$BASE\"/" "$SRC/wails.json"
grep -q "\"productVersion\": \"$BASE\"" "$SRC/wails.json" || die "could not stamp wails.json"

rm -rf "$DIST"
mkdir -p "$DIST"

# --- frontend (embedded by every build) -----------------------------------------
step "frontend"
[ -d frontend/node_modules ] || (cd frontend && npm ci --no-audit --no-fund --loglevel=error)
ln -s "$ROOT/frontend/node_modules" "$SRC/frontend/node_modules"
(cd "$SRC/frontend" && npm run build --silent >"$STAGE/frontend.log" 2>&1) || { cat "$STAGE/frontend.log"; die "frontend build failed"; }

LDFLAGS="-w -s -X main.version=$VERSION"
cd "$SRC"

# --- Linux desktop app (what `wails build -tags webkit2_41` runs) ----------------
step "linux desktop (go build -tags desktop,production,webkit2_41)"
mkdir -p "$STAGE/linux"
CGO_ENABLED=1 go build -tags desktop,production,webkit2_41 -trimpath -ldflags "$LDFLAGS" -o "$STAGE/linux/crosschat-relay" .

# --- headless binary: no tags, links no GTK/WebKit ------------------------------
step "linux headless (go build, no tags)"
mkdir -p "$STAGE/headless"
CGO_ENABLED=1 go build -trimpath -ldflags "$LDFLAGS" -o "$STAGE/headless/crosschat-relay" .
if readelf -d "$STAGE/headless/crosschat-relay" | grep -Eq 'gtk|webkit'; then die "the headless binary links GTK/WebKit"; fi

# --- tarballs ------------------------------------------------------------------
step "tar.gz"
TARDIR=$STAGE/tar/crosschat-relay-$PKG_VERSION
mkdir -p "$TARDIR/share/applications"
cp "$STAGE/linux/crosschat-relay" "$TARDIR/"
cp build/linux/crosschat-relay.desktop "$TARDIR/share/applications/"
for f in build/linux/icons/*.png; do
  s=$(basename "$f" .png)
  mkdir -p "$TARDIR/share/icons/hicolor/${s}x${s}/apps"
  cp "$f" "$TARDIR/share/icons/hicolor/${s}x${s}/apps/crosschat-relay.png"
done
cp LICENSE "$TARDIR/"
cat >"$TARDIR/INSTALL.txt" <<EOF
Crosschat Relay $VERSION (Linux x86-64, desktop app)

Needs GTK 3 and WebKitGTK 4.1 (Debian/Ubuntu: libgtk-3-0 libwebkit2gtk-4.1-0;
Fedora: gtk3 webkit2gtk4.1). To install for your user:

  install -Dm755 crosschat-relay ~/.local/bin/crosschat-relay
  cp -r share/. ~/.local/share/

Run \`crosschat-relay\` (window) or \`crosschat-relay serve\` (no window).
Data: ~/.local/share/crosschat-relay. Start at login: \`crosschat-relay autostart enable\`.
EOF
tar_reproducible() { tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)" -czf "$@"; }
(cd "$STAGE/tar" && tar_reproducible "$DIST/crosschat-relay_${PKG_VERSION}_linux_amd64.tar.gz" "crosschat-relay-$PKG_VERSION")
HDIR=$STAGE/tarh/crosschat-relay-headless-$PKG_VERSION
mkdir -p "$HDIR"
cp "$STAGE/headless/crosschat-relay" LICENSE "$HDIR/"
cat >"$HDIR/INSTALL.txt" <<EOF
Crosschat Relay $VERSION (Linux x86-64, headless: no window libraries needed)

  install -Dm755 crosschat-relay /usr/local/bin/crosschat-relay
  crosschat-relay serve --data-dir /var/lib/crosschat-relay

Listening beyond localhost needs --host 0.0.0.0 --allowed-hosts <names>. See
build/docker/Dockerfile in the source for a container.
EOF
(cd "$STAGE/tarh" && tar_reproducible "$DIST/crosschat-relay-headless_${PKG_VERSION}_linux_amd64.tar.gz" "crosschat-relay-headless-$PKG_VERSION")

# --- .deb and .rpm (nfpm) -------------------------------------------------------
step "deb + rpm (nfpm $NFPM_VERSION)"
export PKG_VERSION
install -Dm755 "$STAGE/linux/crosschat-relay" build/linux/pkgroot/crosschat-relay
for p in deb rpm; do
  nfpm package -f build/linux/nfpm.yaml -p $p -t "$DIST/" >"$STAGE/nfpm-$p.log" 2>&1 || { cat "$STAGE/nfpm-$p.log"; die "nfpm $p failed"; }
done

# --- Windows: NSIS installer ------------------------------------------------------
if [ $SKIP_WINDOWS = no ]; then
  step "windows (wails build -platform windows/amd64 -nsis, mingw-w64 cgo)"
  # Bindings are committed (frontend/wailsjs); generating them would compile a
  # host binary with the mingw compiler, hence -skipbindings. -s: the frontend
  # is already built. wails writes wails_tools.nsh (and icon.ico if missing)
  # under build/windows of the snapshot.
  CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc CXX=x86_64-w64-mingw32-g++ \
    "$BIN/wails" build -platform windows/amd64 -nsis -s -skipbindings -trimpath -v 2 \
    -ldflags "-X main.version=$VERSION" >"$STAGE/windows.log" 2>&1 \
    || { cat "$STAGE/windows.log"; die "windows build failed"; }
  # wails only warns (exit 0) when makensis is missing: check the file.
  [ -f build/bin/crosschat-relay-amd64-installer.exe ] || { cat "$STAGE/windows.log"; die "no NSIS installer was produced"; }
  cp build/bin/crosschat-relay-amd64-installer.exe "$DIST/crosschat-relay_${PKG_VERSION}_windows_amd64_setup.exe"
  # The bare exe too, for checks (it is the file inside the installer), and the
  # build log; not release assets.
  mkdir -p "$DIST/check"
  cp build/bin/crosschat-relay.exe "$DIST/check/crosschat-relay.exe"
  cp "$STAGE/windows.log" "$DIST/check/windows-build.log"
  # The NSIS script as wails generated it (with wails_tools.nsh), for
  # .ci/windows.sh's upgrade check, which runs makensis on it again with a
  # higher version.
  mkdir -p "$DIST/check/nsis/installer"
  cp -r build/windows/installer/. "$DIST/check/nsis/installer/"
  cp build/windows/icon.ico "$DIST/check/nsis/"
  if [ ! -f "$ROOT/build/windows/icon.ico" ] && [ -f build/windows/icon.ico ]; then
    cp build/windows/icon.ico "$ROOT/build/windows/icon.ico"
    echo "note: wrote build/windows/icon.ico (generated by wails from build/appicon.png); commit it"
  fi
else
  echo "--- windows skipped (--skip-windows)"
fi

# --- checksums and the table ------------------------------------------------------
cd "$DIST"
sha256sum -- *.deb *.rpm *.tar.gz $(ls -- *.exe 2>/dev/null) > SHA256SUMS
echo
echo "artifacts in build/dist/ (version $VERSION, package version $PKG_VERSION):"
row() { printf '  %-68s %10d %7.1f\n' "$1" "$2" "$(awk -v b="$2" 'BEGIN{print b/1048576}')"; }
printf '  %-68s %10s %7s\n' file bytes MB
for f in *.deb *.rpm *.tar.gz $(ls -- *.exe 2>/dev/null); do row "$f" "$(stat -c %s "$f")"; done
row "(linux desktop binary, unpacked)" "$(stat -c %s "$STAGE/linux/crosschat-relay")"
row "(linux headless binary, unpacked)" "$(stat -c %s "$STAGE/headless/crosschat-relay")"
[ ! -f check/crosschat-relay.exe ] || row "(windows exe, inside the installer)" "$(stat -c %s check/crosschat-relay.exe)"
echo "dist: done in $(( $(date +%s) - T0 )) s"
