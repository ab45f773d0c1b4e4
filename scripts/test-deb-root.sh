#!/bin/bash
# The package test's steps, run as root inside the throwaway Debian 12 root that
# scripts/test-deb.sh makes (PID 1 is not systemd there, so the service's commands are run
# by hand, the way the unit runs them). Each check prints "ok: ..." or fails the test.
#
#   test-deb-root.sh NEW.deb OLDER.deb
set -euo pipefail

new=$1
older=$2
conf=/etc/hookbox/config.yaml
unit=/lib/systemd/system/hookbox.service
export DEBIAN_FRONTEND=noninteractive

web_port=47180
admin_port=47164

ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
installed_version() { dpkg-query -W -f='${Version}' hookbox 2>/dev/null || true; }
# As the unit runs its commands: user and group hookbox, umask 0077, in the state directory,
# which the user reaches as under DynamicUser=yes: /var/lib/private stays 0700 root outside,
# and the command's own mount namespace gets a 0755 tmpfs there with just hookbox's
# directory bound into it (what systemd mounts for such a service). test-deb.sh runs this
# script in a private mount namespace already, so none of it reaches the machine's mounts.
as_service() {
  unshare --mount --propagation unchanged bash -c '
    set -e
    mkdir -p /run/hookbox-state
    mount --bind /var/lib/private/hookbox /run/hookbox-state
    mount -t tmpfs -o mode=0755 tmpfs /var/lib/private
    mkdir /var/lib/private/hookbox
    mount --bind /run/hookbox-state /var/lib/private/hookbox
    cd /var/lib/hookbox
    umask 0077
    [ -z "${PIDFILE:-}" ] || echo $$ >"$PIDFILE"   # this process becomes the command
    exec setpriv --reuid=hookbox --regid=hookbox --init-groups --inh-caps=-all "$@"' as_service "$@"
}
# The unit's own command lines (%E is /etc), so the test runs what systemd would.
unit_command() {
  sed -n "s/^$1=//p" "$unit" | sed 's|%E|/etc|g'
}

daemon_pid=
start_daemon() {
  # ExecStartPre, then ExecStart, as the service's user; then wait for /readyz.
  for port in "$web_port" "$admin_port"; do
    ! curl -s -m 2 -o /dev/null "http://127.0.0.1:$port/" || fail "port $port is taken on this machine"
  done
  read -ra pre <<<"$(unit_command ExecStartPre)"
  read -ra cmd <<<"$(unit_command ExecStart)"
  as_service timeout 60 "${pre[@]}" || fail "ExecStartPre (${pre[*]}) failed"
  rm -f /tmp/serve.pid
  export PIDFILE=/tmp/serve.pid
  as_service "${cmd[@]}" >/tmp/serve.log 2>&1 &
  daemon_pid=$!   # the job, whose status is the daemon's; /tmp/serve.pid is the daemon
  unset PIDFILE
  for _ in $(seq 1 300); do
    curl -fsS -m 2 "http://127.0.0.1:$admin_port/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$daemon_pid" 2>/dev/null || { cat /tmp/serve.log >&2; fail "serve exited"; }
    sleep 0.1
  done
  cat /tmp/serve.log >&2
  fail "serve not ready within 30 s"
}
stop_daemon() {
  local pid rc=0
  pid=$(cat /tmp/serve.pid)
  kill -TERM "$pid"
  timeout 60 tail --pid="$pid" -f /dev/null || fail "serve did not stop on SIGTERM"
  wait "$daemon_pid" || rc=$?
  [ "$rc" -eq 0 ] || { cat /tmp/serve.log >&2; fail "serve exited $rc on SIGTERM"; }
}
send() {  # ID STATUS: a Standard Webhooks delivery of event ID, signed with the file: secret
  local out
  printf '{"id": "%s", "type": "order.created", "data": {"n": 1}}\n' "$1" >/tmp/event.json
  out=$(timeout 30 hookbox send -c "$conf" orders /tmp/event.json 2>&1) || true
  case "$out" in *"\"status\":\"$2\""*) ;; *) echo "$out" >&2; fail "delivery of $1: not $2";; esac
}
row_status() {  # ID: the inbox row's status, read with the CLI as the service's user
  as_service timeout 30 hookbox inbox show -c "$conf" orders "$1" --json 2>/dev/null |
    sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p' | head -1
}

# --- install, with apt, the package built one version earlier ------------------------------
timeout 600 apt-get install -y -q "$older" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt install $older"; }
[ "$(installed_version)" = "$(dpkg-deb -f "$older" Version)" ] || fail "older version not installed"
ok "apt install ./$(basename "$older")"

# --- what the package put in place ----------------------------------------------------------
getent passwd hookbox >/dev/null && getent group hookbox >/dev/null || fail "no user/group hookbox"
[ "$(stat -c '%a %U:%G' "$conf")" = "640 root:hookbox" ] || fail "$conf is $(stat -c '%a %U:%G' "$conf")"
for f in /usr/bin/hookbox "$unit" /lib/systemd/system/hookbox.socket \
         /usr/lib/sysusers.d/hookbox.conf /usr/share/man/man1/hookbox.1.gz \
         /usr/share/doc/hookbox/README.md /usr/share/doc/hookbox/SECURITY.md.gz \
         /usr/share/doc/hookbox/changelog.gz /usr/share/doc/hookbox/copyright; do
  [ -e "$f" ] || fail "missing $f"
done
grep -qx 'ExecStart=/usr/bin/hookbox serve -c %E/hookbox/config.yaml' "$unit" || fail "ExecStart"
ok "user and group hookbox; $conf 0640 root:hookbox; binary, units, man page, docs"

# The state directory as systemd makes it for StateDirectory= with DynamicUser=yes (the
# unit's working directory: every command below runs in it, as the service's do).
install -d -m 0700 /var/lib/private
install -d -m 0700 -o hookbox -g hookbox /var/lib/private/hookbox
ln -sfn private/hookbox /var/lib/hookbox

# The shipped config: hookbox's user reads it, and its one problem is the missing endpoint.
out=$(as_service hookbox check-config -c "$conf" 2>&1) && fail "check-config passed with no endpoint"
[ "$out" = "$conf: error: endpoints: required: list at least one endpoint
1 error(s)" ] || { echo "$out" >&2; fail "check-config on the shipped config"; }
ok "check-config as hookbox on the shipped config: only 'endpoints: required'"

# The operator's edit: the config's own example endpoint, uncommented, with a file: secret.
# This root shares the machine's network: the listeners move off 8080 and 9464, which a
# `make run` on the machine may hold, to ports checked free first.
sed -i -e '/^#endpoints:/,/^#$/ s/^#//' \
  -e "s/^listen: 127.0.0.1:8080 /listen: 127.0.0.1:$web_port /" \
  -e "s/^admin_listen: 127.0.0.1:9464 /admin_listen: 127.0.0.1:$admin_port /" "$conf"
grep -q "^listen: 127.0.0.1:$web_port " "$conf" && grep -q "^admin_listen: 127.0.0.1:$admin_port " "$conf" ||
  fail "could not move the listeners"
install -d -m 0750 -g hookbox /etc/hookbox/secrets
(umask 027; printf 'whsec_%s\n' "$(head -c 32 /dev/urandom | base64)" >/etc/hookbox/secrets/orders)
chgrp hookbox /etc/hookbox/secrets/orders
as_service hookbox check-config -c "$conf" || fail "check-config as hookbox on the edited config"
ok "check-config as hookbox on the installed config with its example endpoint enabled"

start_daemon
send evt-before-upgrade accepted
stop_daemon
[ "$(row_status evt-before-upgrade)" != "" ] || fail "no row after the first delivery"
ok "the unit's command line (as hookbox) accepted a signed delivery into /var/lib/hookbox"

# --- upgrade to the new package --------------------------------------------------------------
cp "$conf" /tmp/config.edited
timeout 600 apt-get install -y -q "$new" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt install $new"; }
[ "$(installed_version)" = "$(dpkg-deb -f "$new" Version)" ] || fail "new version not installed"
cmp -s "$conf" /tmp/config.edited || fail "the upgrade changed the edited config"
[ "$(stat -c '%a %U:%G' "$conf")" = "640 root:hookbox" ] || fail "$conf is $(stat -c '%a %U:%G' "$conf") after the upgrade"
ok "apt install ./$(basename "$new"): upgrade from $(dpkg-deb -f "$older" Version), edited config kept (0640 root:hookbox)"

# --- the new package's units and its service command line -----------------------------------
timeout 120 systemd-analyze verify "$unit" /lib/systemd/system/hookbox.socket 2>&1 | tee /tmp/verify.log
[ ! -s /tmp/verify.log ] || fail "systemd-analyze verify printed warnings"
ok "systemd-analyze verify hookbox.service hookbox.socket"
score=$(timeout 120 systemd-analyze security --offline=true --no-pager "$unit" 2>&1 |
  sed -n 's/.*Overall exposure level for hookbox.service: \([0-9.]*\).*/\1/p')
awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 1.3) }' || fail "exposure '$score' is over 1.3"
ok "systemd-analyze security --offline=true hookbox.service: $score"

start_daemon   # serve migrates the schema at start
[ "$(row_status evt-before-upgrade)" != "" ] || fail "the row did not survive the upgrade"
send evt-before-upgrade duplicate
send evt-after-upgrade accepted
for _ in $(seq 1 100); do
  [ -f /var/lib/hookbox/events/orders/evt-after-upgrade.json ] && break
  sleep 0.1
done
[ -f /var/lib/hookbox/events/orders/evt-after-upgrade.json ] || fail "the file handler wrote nothing"
stop_daemon
ok "after the upgrade the row is kept (redelivered: duplicate), a new delivery is accepted and handled"

# --- remove: data, config and user stay -----------------------------------------------------
timeout 600 apt-get remove -y -q hookbox >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt remove"; }
[ ! -e /usr/bin/hookbox ] || fail "apt remove left /usr/bin/hookbox"
[ -s /var/lib/private/hookbox/inbox.db ] || fail "apt remove deleted the inbox"
cmp -s "$conf" /tmp/config.edited || fail "apt remove changed the config"
[ -f /etc/hookbox/secrets/orders ] && getent passwd hookbox >/dev/null || fail "apt remove: secrets or user gone"
ok "apt remove: binary gone; inbox, config, secrets and user kept"

# --- purge: config, secrets, state, user ----------------------------------------------------
timeout 600 apt-get purge -y -q hookbox >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt purge"; }
for p in /etc/hookbox /var/lib/hookbox /var/lib/private/hookbox; do
  [ ! -e "$p" ] && [ ! -L "$p" ] || fail "apt purge left $p"
done
! getent passwd hookbox >/dev/null && ! getent group hookbox >/dev/null || fail "apt purge left the user or group"
! dpkg-statoverride --list "$conf" >/dev/null || fail "apt purge left the stat override"
[ -z "$(dpkg-query -W -f='${Status}' hookbox 2>/dev/null | grep -v not-installed)" ] || fail "still known to dpkg"
ok "apt purge: /etc/hookbox, /var/lib/hookbox, the stat override, user and group removed"
