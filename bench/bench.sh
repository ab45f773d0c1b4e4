#!/usr/bin/env bash
# One command for the benchmark (see bench/run.py for what it measures):
#   bench/bench.sh table     `make bench`: ceiling, hookbox full/normal, hookbox on
#                            PostgreSQL (1 and 2 replicas), adnanh/webhook
#   bench/bench.sh scale     `make bench-scale`: 10 k vs 1 M rows, RSS, purge under load
# On a fresh Debian 12 it installs what it needs (the build dependencies, wrk, webhook, a
# PostgreSQL server: run.py starts a throwaway cluster with tests/pg/cluster.sh for its rows),
# builds hookbox in Release into build-bench/ and the ceiling server into
# build-bench/tools/, generates the signed deliveries into bench/out/ (git-ignored) and runs
# bench/run.py, which prints the table and writes it into bench/RESULTS.md.
#
# Knobs (environment): BENCH_DURATION (s per run, 10), BENCH_ROUNDS (3), BENCH_CONNECTIONS
# (16), BENCH_EVENTS (pre-generated requests, 200000), BENCH_ONLY (regex of server names),
# BENCH_RESULTS (file to update, bench/RESULTS.md; "" = none).
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

if [ "$mode" = table ] && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
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

args=(--hookbox "$build/hookbox" --ceiling "$build/tools/ceiling" --webhook "$(command -v webhook)"
      --data "$out/deliveries.tsv" --warmup-data "$out/warmup.tsv" --out "$out"
      --duration "${BENCH_DURATION:-10}" --rounds "${BENCH_ROUNDS:-3}"
      --connections "${BENCH_CONNECTIONS:-16}")
[ -n "${BENCH_ONLY:-}" ] && args+=(--only "$BENCH_ONLY")
results=${BENCH_RESULTS-$root/bench/RESULTS.md}
[ -n "$results" ] && args+=(--results "$results")
command="make bench"
[ "$mode" = scale ] && command="make bench-scale"
for v in BENCH_DURATION BENCH_ROUNDS BENCH_CONNECTIONS BENCH_EVENTS BENCH_ONLY; do
  [ -n "${!v:-}" ] && command="$v=${!v} $command"
done
exec python3 "$root/bench/run.py" "$mode" "${args[@]}" --command "$command"
