#!/usr/bin/env bash
# `make test-deb`: hookbox's Debian package in a throwaway Debian 12 root. mmdebstrap
# (Debian's own, no container runtime) bootstraps bookworm from the Debian mirror this
# machine's apt uses, copies both packages in, and runs scripts/test-deb-root.sh inside it
# as a customize hook, with /proc, /sys and /dev mounted, in a mount namespace of its own
# (the test mounts what systemd would for the service, and none of it may leak); the root is built in a temporary
# directory and thrown away at the end (TARGET /dev/null). Needs root (mmdebstrap's root
# mode); the bootstrap downloads about 100 MB.
#
#   test-deb.sh NEW.deb OLDER.deb
set -euo pipefail

new=$(realpath "$1")
older=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
mirror=${HOOKBOX_DEB_MIRROR:-http://deb.debian.org/debian}
security=${HOOKBOX_DEB_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

if ! command -v mmdebstrap >/dev/null; then
  echo "test-deb: installing mmdebstrap" >&2
  export DEBIAN_FRONTEND=noninteractive
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  timeout 600 "${as_root[@]}" apt-get update -qq
  timeout 1200 "${as_root[@]}" apt-get install -y -qq --no-install-recommends mmdebstrap
fi
[ "$(id -u)" -eq 0 ] || { echo "test-deb: run as root (mmdebstrap --mode=root)" >&2; exit 1; }

# The throwaway root's temporary directory lives beside the packages (the build folder).
tmp=$(mktemp -d "$(dirname "$new")/test-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$new" "$older" "$here/test-deb-root.sh" "$tmp/"

# curl: the test waits for /readyz. systemd: systemd-analyze (the package pulls it in too).
echo "test-deb: bootstrapping Debian 12 from $mirror, then the checks" >&2
TMPDIR=$tmp timeout 1800 mmdebstrap --mode=root --variant=apt --quiet \
  --include=curl,systemd \
  --customize-hook="mkdir -p \"\$1/root/test\"" \
  --customize-hook="copy-in $tmp/$(basename "$new") $tmp/$(basename "$older") $tmp/test-deb-root.sh /root/test" \
  --customize-hook="unshare --mount --propagation private chroot \"\$1\" timeout 1200 bash /root/test/test-deb-root.sh /root/test/$(basename "$new") /root/test/$(basename "$older")" \
  bookworm /dev/null \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb $security bookworm-security main"
echo "test-deb: all checks passed" >&2
