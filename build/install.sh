#!/usr/bin/env bash
# Installs a built crosschat-relay as BINDIR/crosschat-relay (`make install`,
# `make run`), so the README's commands and the Claude Code plugin, whose
# hook and MCP server run `crosschat-relay` by name, find it on PATH.
#
#   bash build/install.sh BINARY BINDIR
#
# The copy is written beside the target and renamed over it, so a relay
# running from the old file keeps running. It says where the program went,
# and warns when BINDIR is not on PATH or another crosschat-relay comes first.
set -euo pipefail

bin=${1:?usage: install.sh BINARY BINDIR}
bindir=${2:?usage: install.sh BINARY BINDIR}
[ -x "$bin" ] || { echo "install: $bin is not a built program" >&2; exit 1; }

mkdir -p "$bindir"
target="$bindir/crosschat-relay"
tmp="$bindir/.crosschat-relay.$$"
trap 'rm -f "$tmp"' EXIT
cp "$bin" "$tmp"
chmod 0755 "$tmp"
mv -f "$tmp" "$target"
trap - EXIT
echo "==> installed $("$target" version) as $target"

on_path=no
IFS=: read -r -a dirs <<< "${PATH:-}"
for d in "${dirs[@]}"; do
  if [ -n "$d" ] && [ "$d" -ef "$bindir" ]; then on_path=yes; break; fi
done
if [ "$on_path" = no ]; then
  echo "warning: $bindir is not on your PATH, so \`crosschat-relay\` (and the Claude Code plugin) will not find it." >&2
  echo "  Add it, e.g.: echo 'export PATH=\"$bindir:\$PATH\"' >> ~/.profile   (then open a new terminal)" >&2
  echo "  or install elsewhere: make install PREFIX=/usr/local   (the program goes to PREFIX/bin)" >&2
else
  found=$(command -v crosschat-relay || true)
  if [ -n "$found" ] && ! [ "$found" -ef "$target" ]; then
    echo "warning: $found comes before $target on your PATH; \`crosschat-relay\` runs that one." >&2
  fi
fi
