#!/usr/bin/env bash
# Installs what hookbox needs to build and test on Debian 12, and nothing when it is all
# there already. Runs apt-get as root, or through sudo. Called by `make run`, `make test` and `make lint`.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libcpp-httplib-dev libsqlite3-dev libssl-dev libyaml-cpp-dev libcli11-dev
  libsimdjson-dev nlohmann-json3-dev catch2 libsystemd-dev libpq-dev
  sqlite3 openssl curl ca-certificates
  postgresql   # the tests start a throwaway cluster of their own (tests/pg/cluster.sh)
  systemd   # systemd-analyze: the unit files are verified by the tests
  clang libfuzzer-14-dev libclang-rt-14-dev
  libboost1.81-dev     # Boost.Beast: the listener's HTTP parser (src/http/request_parser.cc)
  libhttp-parser-dev   # nodejs http-parser: the second reading in tests/fuzz/fuzz_http.cc
  libkainjow-mustache-dev   # Mustache: the console's pages (src/console/render.cc)
  clang-format clang-tidy   # make lint
  flake8   # make lint: the Python (.flake8; Debian 12 has no ruff)
  chromium   # headless, driven by puppeteer-core: the console's browser tests (tests/browser)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js for the interop tests: any node and npm on PATH will do (a machine may have them
# from elsewhere, and Debian's npm package conflicts with such installs); else Debian's.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
