#!/usr/bin/env bash
# Builds hookbox's Debian package (`make deb`): installs the tools and the build
# dependencies that are missing, copies the working tree (what git tracks, plus new files
# it does not ignore) into OUT/tree/hookbox, builds there with `dpkg-buildpackage -b -us
# -uc`, and leaves hookbox_<version>_amd64.deb in OUT, checked by lintian (no error, no
# warning). The copy keeps the package build from touching the tree, and one fixed path for
# every build lets ccache reuse the previous build's objects.
#
#   build-deb.sh OUT            the package of VERSION; debian/changelog must say the same
#   build-deb.sh OUT --older    the same tree as VERSION~older1, into OUT/older, unlinted:
#                               the package `make test-deb` upgrades from
set -euo pipefail

out=$(realpath -m "$1")
older=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$root/VERSION")
# Every step is bounded: the build itself takes about 10 minutes from cold on 2 cores.
build_timeout=${HOOKBOX_DEB_BUILD_TIMEOUT:-3600}

as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "build-deb: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 "${as_root[@]}" apt-get update -qq
  timeout 1200 "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
apt_install dpkg-dev debhelper fakeroot lintian

changelog_version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
if [ -z "$older" ] && [ "$changelog_version" != "$version" ]; then
  echo "build-deb: debian/changelog's version is $changelog_version, VERSION says $version:" \
       "add a changelog entry (dch -v $version)" >&2
  exit 1
fi

tree=$out/tree/hookbox
rm -rf "$out/tree"
mkdir -p "$tree"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$tree"

if [ -n "$older" ]; then
  # A lower version of the same tree: a changelog entry on top, VERSION~older1 (~ sorts
  # before the release, so the real package is an upgrade from it).
  deb_version="$version~older1"
  { printf 'hookbox (%s) bookworm; urgency=medium\n\n  * The package test upgrades from this.\n\n' "$deb_version"
    printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Maintainer)" \
      "$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Date)"
    cat "$tree/debian/changelog"; } > "$tree/debian/changelog.new"
  mv "$tree/debian/changelog.new" "$tree/debian/changelog"
  dest=$out/older
else
  deb_version=$version
  dest=$out
fi

# The build dependencies (debian/control), as `make run` installs what it needs.
if ! (cd "$tree" && dpkg-checkbuilddeps >/dev/null 2>&1); then
  echo "build-deb: installing the build dependencies" >&2
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 "${as_root[@]}" apt-get update -qq
  (cd "$tree" && timeout 1200 "${as_root[@]}" apt-get build-dep -y -qq --no-install-recommends ./)
fi

opts="nocheck parallel=$(nproc)"
if command -v ccache >/dev/null; then
  # debhelper gives the build its own HOME: point ccache at the caller's cache and settings.
  opts="$opts ccache"
  CCACHE_DIR=$(ccache -k cache_dir)
  CCACHE_BASEDIR=$(ccache -k base_dir)
  export CCACHE_DIR CCACHE_BASEDIR
  [ "$(ccache -k hash_dir)" = false ] && export CCACHE_NOHASHDIR=1
fi

echo "build-deb: building hookbox $deb_version in $tree" >&2
(cd "$tree" && DEB_BUILD_OPTIONS="$opts" timeout "$build_timeout" \
  dpkg-buildpackage -b -us -uc) > "$out/tree/build.log" 2>&1 || {
  tail -40 "$out/tree/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed; the whole log: $out/tree/build.log" >&2
  exit 1
}

mkdir -p "$dest"
rm -f "$dest"/hookbox_*.deb "$dest"/hookbox-dbgsym_*.deb "$dest"/hookbox_*.buildinfo \
      "$dest"/hookbox_*.changes
mv "$out"/tree/hookbox_"$deb_version"_* "$dest"/
mv "$out"/tree/hookbox-dbgsym_"$deb_version"_* "$dest"/ 2>/dev/null || true
deb=$dest/hookbox_${deb_version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb
echo "build-deb: $deb" >&2

if [ -z "$older" ]; then
  # Errors and warnings fail the build; an override must say why (debian/*.lintian-overrides).
  timeout 600 lintian --fail-on error,warning --display-info "$deb"
  echo "build-deb: lintian: no error, no warning" >&2
fi
