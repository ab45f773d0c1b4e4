#!/usr/bin/env bash
# The systemd units, checked the way systemd itself would read them: `systemd-analyze verify`
# on both (unknown keys, bad values, a missing binary, a socket without its service), and
# `systemd-analyze security` on the service, whose exposure must stay at 2.0 or lower. The
# units are filled in with this build's binary, so the check needs no install. Works without
# systemd running (--offline=true reads the unit file only).
#
#   units_test.sh HOOKBOX_BIN SYSTEMD_SOURCE_DIR
set -euo pipefail

bin=$(realpath "$1")
src=$(realpath "$2")
max_exposure=2.0

analyze=$(command -v systemd-analyze || true)
if [ -z "$analyze" ]; then
  echo "systemd-analyze is missing: run scripts/install-deps.sh (Debian package systemd)" >&2
  exit 1
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for unit in hookbox.service hookbox.socket; do
  sed -e "s|@HOOKBOX_BINDIR@|$(dirname "$bin")|g" \
      -e "s|@HOOKBOX_DOCDIR@|/usr/share/doc/hookbox|g" "$src/$unit.in" > "$dir/$unit"
  if grep -n '@[A-Z_]*@' "$dir/$unit"; then
    echo "FAIL: $unit has a placeholder the build does not fill" >&2
    exit 1
  fi
done

cd "$dir"
# verify exits 0 on some warnings: any output at all is a failure here.
out=$("$analyze" verify --man=no hookbox.service hookbox.socket 2>&1) || {
  echo "$out" >&2
  echo "FAIL: systemd-analyze verify" >&2
  exit 1
}
if [ -n "$out" ]; then
  echo "$out" >&2
  echo "FAIL: systemd-analyze verify printed warnings" >&2
  exit 1
fi
echo "ok: systemd-analyze verify hookbox.service hookbox.socket"

report=$("$analyze" security --offline=true --man=no hookbox.service 2>&1) || true
score=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for hookbox.service: \([0-9.]*\).*/\1/p')
if [ -z "$score" ]; then
  echo "$report" >&2
  echo "FAIL: no exposure level in systemd-analyze security's report" >&2
  exit 1
fi
echo "systemd-analyze security --offline=true hookbox.service: $score"
# --threshold is in tenths; a second opinion from systemd itself on the comparison.
threshold=$(awk -v m="$max_exposure" 'BEGIN { printf "%d", m * 10 }')
if ! "$analyze" security --offline=true --man=no --threshold="$threshold" hookbox.service \
    >/dev/null 2>&1; then
  printf '%s\n' "$report" | grep '✗' >&2 || true
  echo "FAIL: exposure $score is over $max_exposure" >&2
  exit 1
fi
echo "ok: exposure $score <= $max_exposure"
