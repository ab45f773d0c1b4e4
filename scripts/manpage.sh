#!/bin/sh
# Writes hookbox(1) on stdout: the CLI's own --help, of the program and of every subcommand
# (walked from each help's "Subcommands:" list), turned into roff, then a written section on
# the config file (CONFIG_ROFF, roff as is). The help text stays the one source of the
# options: a new flag reaches the man page at the next package build. Run by debian/rules.
#
#   manpage.sh HOOKBOX_BIN VERSION CONFIG_ROFF > hookbox.1
set -eu

bin=$1
version=$2
config_roff=$3

# One help text (CLI11's layout: a description line, "Usage: PATH ...", then sections
# "Options:", "Positionals:", "Subcommands:" of two-space-indented entries, a name and its
# description after a run of spaces; a long name puts its description on the next line).
# $1: the command words after "hookbox" ("" for the program itself). Subcommands are
# printed as "SUB name" lines on fd 3, for the walk below.
render() {
  words=$1
  # shellcheck disable=SC2086  # the words are split on purpose
  "$bin" $words --help | awk -v words="$words" '
    function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
    function text(s) { gsub(/\\/, "\\e", s); sub(/^[.'\'']/, "\\\\\\&&", s); return s }
    function flush() {
      if (name == "") return
      if (section == "Subcommands") { print "SUB " name > "/dev/fd/3" }
      else if (name !~ /^-h,--help/) {
        print ".TP"
        n = name
        if (match(n, / [A-Z][A-Z:_ \[\]0-9.-]*$/)) {
          arg = substr(n, RSTART + 1); n = substr(n, 1, RSTART - 1)
        } else arg = ""
        gsub(/,/, ", ", n)
        line = "\\fB" esc(n) "\\fR"
        if (arg != "") line = line " \\fI" esc(arg) "\\fR"
        print line
        print (desc == "" ? "\\&" : text(desc))
      }
      name = ""; desc = ""
    }
    NR == 1 {
      if (words == "") { sub(/^hookbox: /, ""); top = $0; next }
      print ".SS \"hookbox " words "\""
      print text($0); next
    }
    /^Usage: / {
      sub(/^Usage: [^ ]*/, "hookbox")
      print ".PP"
      print "\\fBUsage:\\fR " esc($0)
      next
    }
    /^[A-Z][A-Za-z ]*:$/ { flush(); section = substr($0, 1, length($0) - 1); next }
    /^  [^ ]/ && section != "" {
      flush()
      line = substr($0, 3)
      if (match(line, /  +/)) {
        name = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH)
      } else { name = line; desc = "" }
      sub(/ +$/, "", desc)
      # CLI11 writes a relation between options ("--json Excludes: --raw-body") between the
      # name and the description, one space apart.
      if (match(name, / (Excludes|Needs): [^ ]+/)) {
        rel = substr(name, RSTART + 1, RLENGTH - 1)
        desc = substr(name, RSTART + RLENGTH + 1) (desc == "" ? "" : " " desc) " (" rel ")"
        name = substr(name, 1, RSTART - 1)
      }
      next
    }
    /^   +[^ ]/ && name != "" { d = $0; sub(/^ +/, "", d); desc = (desc == "" ? d : desc " " d); next }
    /^$/ { flush(); next }
    { flush(); print ".PP"; print text($0) }
    END { flush() }
  '
}

# Every command path, depth first: "", then each subcommand with its own subcommands.
walk() {
  subs=$(render "$1" 3>&1 >/dev/null | sed -n 's/^SUB //p')
  [ -n "$1" ] && printf '%s\n' "$1"
  for s in $subs; do
    walk "${1:+$1 }$s"
  done
}

summary=$("$bin" --help | sed -n '1s/^hookbox: //p')
cat <<EOF
.TH HOOKBOX 1 "" "hookbox $version" "User Commands"
.SH NAME
hookbox \\- $summary
.SH SYNOPSIS
.B hookbox
.I command
.RI [ options ]
.RI [ arguments ]
.SH DESCRIPTION
hookbox is a webhook receiver daemon. It verifies each delivery's signature as its
producer signs it, stores each event once in a durable inbox (a SQLite file, or a
PostgreSQL database that several replicas share), answers 200 only once the event is
committed, and then runs the operator's handlers (exec, http, file, sql) with retries,
leases and dead letters.
.PP
.B hookbox serve
is the daemon (hookbox.service runs it); the other commands read or change the same
config and inbox while it runs. Every command takes
.B \\-h
(\\fB\\-\\-help\\fR). The config file is
.B \\-c
.IR FILE ,
else \\fB\$HOOKBOX_CONFIG\\fR, else
.IR /etc/hookbox/config.yaml .
.SH COMMANDS
EOF
walk "" | while IFS= read -r words; do
  render "$words" 3>/dev/null
done
cat "$config_roff"
