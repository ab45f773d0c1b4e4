#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb into a fresh temporary directory, the
# server listening on a unix socket in that directory only (no TCP port), trust auth, then
# everything removed. PostgreSQL refuses to run as root, so as root the cluster belongs to
# Debian's `postgres` user (created by the postgresql package) and runs through runuser.
# ctest runs `start` as a fixture setup and `stop` as its cleanup (CMakeLists.txt); the
# tests read STATE for the URL and use server-stop / server-start to restart the server
# under load.
#
#   cluster.sh start STATE          new cluster; writes PG_DIR, PG_BIN, PG_URL to STATE
#   cluster.sh stop STATE           stop it and remove its directory and STATE
#   cluster.sh server-stop STATE    stop the server (fast shutdown), keep the data
#   cluster.sh server-start STATE   start it again
set -euo pipefail

usage() { echo "usage: $0 start|stop|server-stop|server-start STATE" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
state=$2

find_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  return 1
}

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

load_state() {
  [ -f "$state" ] || { echo "cluster.sh: no cluster state in $state" >&2; exit 1; }
  # shellcheck disable=SC1090
  . "$state"
}

case "$cmd" in
  start)
    if [ -f "$state" ]; then "$0" stop "$state" || true; fi
    bin=$(find_bin) || {
      echo "cluster.sh: PostgreSQL is not installed (scripts/install-deps.sh installs it)" >&2
      exit 1
    }
    if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
      echo "cluster.sh: running as root needs the postgres user (Debian's postgresql package)" >&2
      exit 1
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hookbox-pg.XXXXXX")
    chmod 700 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    if ! as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
        --no-sync >"$dir/initdb.log" 2>&1; then
      cat "$dir/initdb.log" >&2
      rm -rf "$dir"
      exit 1
    fi
    # fsync off: a throwaway cluster, and the tests restart the server cleanly, never the
    # machine. Enough connections for two replicas' pools and the tests' own.
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$dir'
max_connections = 200
fsync = off
full_page_writes = off
log_min_messages = warning
EOF
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null; then
      cat "$dir/server.log" >&2 || true
      rm -rf "$dir"
      exit 1
    fi
    {
      echo "PG_DIR='$dir'"
      echo "PG_BIN='$bin'"
      echo "PG_URL='postgresql:///postgres?host=$dir&user=postgres'"
    } >"$state"
    echo "cluster.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $dir"
    ;;
  stop)
    load_state
    as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR" "$state"
    ;;
  server-stop)
    load_state
    as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
    ;;
  server-start)
    load_state
    as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start >/dev/null
    ;;
  *) usage ;;
esac
