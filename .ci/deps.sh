#!/usr/bin/env bash
# Installs the Debian packages named as arguments that the machine lacks:
# with apt-get as root, or else says which command to run. Used by
# `make test` (Chromium for the dashboard tests) so the README's two
# commands work on a fresh machine.
set -uo pipefail
# shellcheck source=apt.sh
. "$(dirname "$0")/apt.sh"
if [ "$(id -u)" -ne 0 ]; then
  missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing system packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
apt_missing "$@"
