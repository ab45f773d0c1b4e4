#!/usr/bin/env bash
# One command for the benchmark (bench/run.py; what each mode measures: bench/scenarios/MODE.py):
#   bench/bench.sh table     `make bench`: ceiling, hookbox full/normal, hookbox on
#                            PostgreSQL (1 and 2 replicas), adnanh/webhook
#   bench/bench.sh replicas  `make bench-replicas`: hookbox on PostgreSQL, 1 replica vs 2, each
#                            replica in its own cgroup capped at half a core (as root; cgroup
#                            v1 or v2), PostgreSQL and wrk uncapped
#   bench/bench.sh handlers  `make bench-handlers`: hookbox full with the exec, file and http
#                            handlers, accepted req/s and handled end to end events/s, beside
#                            its accept-only rate and adnanh/webhook's end to end; then, alone,
#                            the isolation row: a fast exec handler's start latency while a
#                            slow one (concurrency 1) has 1,000 jobs queued
#   bench/bench.sh scale     `make bench-scale`: 10 k vs 1 M rows, RSS, purge under load
#   bench/bench.sh console   `make bench-console`: the console's pages with 1 M rows
# On a fresh Debian 12 it installs what it needs (the build dependencies, wrk, webhook, a
# PostgreSQL server: run.py starts a throwaway cluster with tests/pg/cluster.sh for its rows),
# builds hookbox in Release into build-bench/ and the ceiling server into
# build-bench/tools/, generates the signed deliveries into bench/out/ (git-ignored) and runs
# bench/run.py, which prints the table and writes it into bench/RESULTS.md.
#
# Knobs (environment): BENCH_DURATION (s per run, 10; handlers: 3), BENCH_ROUNDS (3),
# BENCH_CONNECTIONS (16), BENCH_EVENTS (pre-generated requests, 200000), BENCH_ONLY (regex of
# server names), BENCH_RESULTS (file to update, bench/RESULTS.md; "" = none). handlers only:
# BENCH_HANDLER_CONCURRENCY (writes `concurrency: N` into each handler; unset: not written),
# BENCH_HANDLER_WORKERS (writes `workers: N`; unset: not written), BENCH_DRAIN_MAX (longest
# wait for a run's jobs after its load, s, 120). replicas only: BENCH_CAP_CORES (each replica's
# CPU cap, cores, 0.5). BENCH_SMOKE=1: run.py --smoke, a check that the mode still runs, in
# seconds, not a measurement (one round of 1 s, small inboxes, the isolation row's 20 slow jobs
# and 2 s of fast events; RESULTS.md left alone); with BENCH_EVENTS=3000 the deliveries are
# made in a second too. BENCH_ONLY=isolation: handlers' isolation row alone.
set -euo pipefail
mode=${1:-table}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out
build=$root/build-bench
mkdir -p "$out"

# --- dependencies --------------------------------------------------------------------------
"$root/scripts/install-deps.sh"
missing=()
for p in wrk webhook python3 sqlite3 postgresql; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench: installing ${missing[*]}" >&2
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if { [ "$mode" = table ] || [ "$mode" = replicas ]; } && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "bench: no PostgreSQL server in /usr/lib/postgresql/*/bin (Debian's postgresql package)" >&2
  exit 1
fi

# --- builds (Release, in their own directories) --------------------------------------------
echo "bench: building hookbox (Release) in $build" >&2
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target hookbox >/dev/null
cmake -S "$root/bench" -B "$build/tools" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build/tools" -j"$(nproc)" >/dev/null

# --- deliveries (made once; the same for every server and every run) -----------------------
secret=bench-github-secret
events=${BENCH_EVENTS:-200000}
gen() {  # gen FILE COUNT SEED
  if [ ! -s "$1" ] || [ "$(cat "$1.params" 2>/dev/null)" != "$2 $3 $secret" ]; then
    python3 "$root/bench/gen_deliveries.py" --out "$1" --count "$2" --seed "$3" --secret "$secret"
    echo "$2 $3 $secret" > "$1.params"
  fi
}
gen "$out/deliveries.tsv" "$events" 1
gen "$out/warmup.tsv" 20000 2

data=$out/deliveries.tsv
warmup=$out/warmup.tsv
duration=${BENCH_DURATION:-10}
if [ "$mode" = handlers ]; then
  # Short loads, since each run then waits until its events are handled (the whole mode
  # stays within a few minutes). The first lines of the same files: wrk loads only what
  # the run can send (15,000 req/s at most, at least 45,000 lines), and the warm-up stores
  # 500 events (the rest of its second are redeliveries of them), so that the wait for the
  # warm-up's jobs to be done stays short.
  duration=${BENCH_DURATION:-3}
  lines=$((duration * 15000))
  [ "$lines" -lt 45000 ] && lines=45000
  cut_file() {  # cut_file SRC LINES DST
    if [ ! -s "$3" ] || [ "$(cat "$3.params" 2>/dev/null)" != "$2 $(cat "$1.params")" ]; then
      head -n "$2" "$1" > "$3"
      echo "$2 $(cat "$1.params")" > "$3.params"
    fi
  }
  cut_file "$data" "$lines" "$out/handlers.tsv"
  cut_file "$warmup" 500 "$out/handlers-warmup.tsv"
  data=$out/handlers.tsv
  warmup=$out/handlers-warmup.tsv
fi
args=(--hookbox "$build/hookbox" --ceiling "$build/tools/ceiling" --webhook "$(command -v webhook)"
      --data "$data" --warmup-data "$warmup" --out "$out"
      --duration "$duration" --rounds "${BENCH_ROUNDS:-3}"
      --connections "${BENCH_CONNECTIONS:-16}")
[ -n "${BENCH_ONLY:-}" ] && args+=(--only "$BENCH_ONLY")
[ -n "${BENCH_HANDLER_CONCURRENCY:-}" ] && args+=(--handler-concurrency "$BENCH_HANDLER_CONCURRENCY")
[ -n "${BENCH_HANDLER_WORKERS:-}" ] && args+=(--handler-workers "$BENCH_HANDLER_WORKERS")
[ -n "${BENCH_DRAIN_MAX:-}" ] && args+=(--drain-max "$BENCH_DRAIN_MAX")
[ -n "${BENCH_CAP_CORES:-}" ] && args+=(--cap-cores "$BENCH_CAP_CORES")
[ -n "${BENCH_SMOKE:-}" ] && args+=(--smoke)
results=${BENCH_RESULTS-$root/bench/RESULTS.md}
[ -n "$results" ] && args+=(--results "$results")
command="make bench"
[ "$mode" = scale ] && command="make bench-scale"
[ "$mode" = console ] && command="make bench-console"
[ "$mode" = replicas ] && command="make bench-replicas"
[ "$mode" = handlers ] && command="make bench-handlers"
for v in BENCH_DURATION BENCH_ROUNDS BENCH_CONNECTIONS BENCH_EVENTS BENCH_ONLY \
         BENCH_HANDLER_CONCURRENCY BENCH_HANDLER_WORKERS BENCH_DRAIN_MAX BENCH_CAP_CORES \
         BENCH_SMOKE; do
  [ -n "${!v:-}" ] && command="$v=${!v} $command"
done
exec python3 "$root/bench/run.py" "$mode" "${args[@]}" --command "$command"
