# shellcheck shell=bash
# apt_missing PKG...: install, as root, the Debian packages the machine lacks.
# Sourced by .ci/run, .ci/deps.sh and .ci/lib.sh, so each installs the same way.
#
# A mirror in the middle of a sync can serve an index whose size does not match
# its Release file ("File has unexpected size … Mirror sync in progress?"), often
# for an architecture we barely use (i386, for wine32). apt-get update then fails
# although every package we need is installable from the indexes it did fetch.
# So: the update is tried up to APT_UPDATE_TRIES times (APT_RETRY_DELAY seconds
# apart); whatever its outcome the install is tried; an install that succeeds
# after a failed update goes on with a warning naming the failure. Only a failed
# install fails. Returns 0 when nothing is missing.
apt_missing() {
  local missing=() p try updated=no
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then echo "all present: $*"; return 0; fi
  echo "installing: ${missing[*]}"
  for try in $(seq "${APT_UPDATE_TRIES:-3}"); do
    if apt-get update -q; then updated=yes; break; fi
    echo "apt-get update failed (try $try of ${APT_UPDATE_TRIES:-3})"
    [ "$try" -lt "${APT_UPDATE_TRIES:-3}" ] && sleep "${APT_RETRY_DELAY:-10}"
  done
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 \
      --no-install-recommends "${missing[@]}"; then
    echo "apt-get install failed for: ${missing[*]}"
    return 1
  fi
  [ "$updated" = yes ] ||
    echo "warning: apt-get update failed on every try (an index above), but every package installed; going on"
  return 0
}
