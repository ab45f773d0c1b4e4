#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb into a fresh temporary directory, the
# server listening on a unix socket in that directory only (no TCP port), trust auth, then
# everything removed. PostgreSQL refuses to run as root, so as root the cluster belongs to
# Debian's `postgres` user (created by the postgresql package) and runs through runuser.
# ctest runs `start` as a fixture setup and `stop` as its cleanup (CMakeLists.txt); the
# tests read STATE for the URL and use server-stop / server-start to restart the server
# under load. A failover test makes a pair of its own: `standby` clones a primary into a
# synchronous streaming standby (its own directory and socket), `server-kill` is the loss of
# the primary, `promote` makes the standby the new primary.
#
#   cluster.sh start STATE          new cluster; writes PG_DIR, PG_BIN, PG_URL to STATE
#   cluster.sh stop STATE           stop it and remove its directory and STATE
#   cluster.sh server-stop STATE    stop the server (fast shutdown), keep the data
#   cluster.sh server-start STATE   start it again
#   cluster.sh server-kill STATE    stop the server at once (immediate shutdown: no
#                                   checkpoint, clients cut off), as if its host were lost
#   cluster.sh standby STATE STANDBY_STATE
#                                   a new cluster that streams STATE's WAL (pg_basebackup
#                                   -R), in recovery, read-only; STATE's commits then wait
#                                   until it has flushed them (synchronous_standby_names).
#                                   STANDBY_STATE as `start` writes it; `stop` removes it
#   cluster.sh promote STANDBY_STATE
#                                   end its recovery: it takes writes (pg_ctl promote -w)
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|server-stop|server-start|server-kill|promote STATE" >&2
  echo "       $0 standby STATE STANDBY_STATE" >&2
  exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
state=$2
if [ "$cmd" = standby ]; then [ $# -eq 3 ] || usage; else [ $# -eq 2 ] || usage; fi

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
    # machine. Enough connections for two replicas' pools and the tests' own. WAL a standby
    # can stream (`standby`), over the socket, as the postgres user (trust: only this
    # machine's users reach the socket, in a directory of mode 700).
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$dir'
max_connections = 200
fsync = off
full_page_writes = off
log_min_messages = warning
wal_level = replica
max_wal_senders = 4
EOF
    echo "local replication postgres trust" >>"$dir/data/pg_hba.conf"
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
  server-kill)
    load_state
    as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null
    ;;
  standby)
    load_state
    standby_state=$3
    if [ -f "$standby_state" ]; then "$0" stop "$standby_state" || true; fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hookbox-pg.XXXXXX")
    chmod 700 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    # -R: standby.signal, and primary_conninfo (the primary's socket) in postgresql.auto.conf.
    # -X stream: the WAL written during the copy comes along, so the copy starts consistent.
    if ! as_owner "$PG_BIN/pg_basebackup" -h "$PG_DIR" -U postgres -D "$dir/data" -R -X stream \
        -c fast --no-sync >"$dir/basebackup.log" 2>&1; then
      cat "$dir/basebackup.log" >&2
      rm -rf "$dir"
      exit 1
    fi
    # Its own socket (the later line wins), and the name the primary's
    # synchronous_standby_names lists (a walreceiver reports cluster_name as its
    # application_name).
    cat >>"$dir/data/postgresql.conf" <<EOF
unix_socket_directories = '$dir'
cluster_name = 'hookbox_standby'
EOF
    if ! as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null; then
      cat "$dir/server.log" >&2 || true
      rm -rf "$dir"
      exit 1
    fi
    {
      echo "PG_DIR='$dir'"
      echo "PG_BIN='$PG_BIN'"
      echo "PG_URL='postgresql:///postgres?host=$dir&user=postgres'"
    } >"$standby_state"
    # Only now (ALTER SYSTEM writes the primary's own postgresql.auto.conf, which the copy
    # has already taken): every commit on the primary waits for the standby's flush, and
    # the standby, once promoted, waits for no one.
    psql_primary() { as_owner "$PG_BIN/psql" -X -At -h "$PG_DIR" -U postgres -d postgres -c "$1"; }
    psql_primary "ALTER SYSTEM SET synchronous_standby_names = 'hookbox_standby'" >/dev/null
    psql_primary "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 300); do
      if [ "$(psql_primary "SELECT sync_state FROM pg_stat_replication
                            WHERE application_name = 'hookbox_standby'")" = sync ]; then
        echo "cluster.sh: synchronous standby on $dir"
        exit 0
      fi
      sleep 0.1
    done
    echo "cluster.sh: the standby on $dir never became synchronous" >&2
    cat "$dir/server.log" >&2 || true
    "$0" stop "$standby_state" || true
    exit 1
    ;;
  promote)
    load_state
    as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -w -t 60 promote >/dev/null
    ;;
  *) usage ;;
esac
