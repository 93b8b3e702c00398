#!/usr/bin/env bash
# Bytes per run of a plain `abperf run -N -r N true` store, beside hyperfine's JSON export and
# abperf's own CSV export of the same runs, all from one session.
#
# Each figure is the difference between 2N and N runs divided by N, so fixed costs (the schema,
# the experiment's design and environment, JSON headers) cancel. The store is measured as
# `page_count * page_size` of a VACUUMed copy (free pages and the WAL do not count).
#
# Usage: benches/store_size.sh [N] [ABPERF]   (needs: sqlite3, hyperfine; default N = 500,
#        ABPERF = target/release/abperf, built when missing)
set -euo pipefail
N=${1:-500}
cd "$(dirname "$0")/.."
ABPERF=${2:-}
if [ -z "$ABPERF" ]; then
    [ -x target/release/abperf ] || cargo build --release --quiet
    ABPERF=$PWD/target/release/abperf
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

store_bytes() { # runs -> bytes of a VACUUMed copy of a store holding one experiment of that many runs
    local db=$TMP/s$1.db
    "$ABPERF" run --db "$db" -N -r "$1" --warmup 0 true >/dev/null 2>&1
    "$ABPERF" export --db "$db" --format csv latest >"$TMP/e$1.csv"
    sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE); VACUUM INTO '$TMP/v$1.db';" >/dev/null
    sqlite3 "$TMP/v$1.db" "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size;"
}

hyperfine_bytes() { # runs -> bytes of hyperfine's JSON export
    hyperfine -N --warmup 0 --runs "$1" --export-json "$TMP/h$1.json" true >/dev/null 2>&1
    stat -c %s "$TMP/h$1.json"
}

s1=$(store_bytes "$N"); s2=$(store_bytes $((2 * N)))
c1=$(stat -c %s "$TMP/e$N.csv"); c2=$(stat -c %s "$TMP/e$((2 * N)).csv")
h1=$(hyperfine_bytes "$N"); h2=$(hyperfine_bytes $((2 * N)))

per() { awk -v a="$1" -v b="$2" -v n="$N" 'BEGIN { printf "%.1f", (b - a) / n }'; }
printf '%-40s %12s %12s %10s\n' "bytes per run of \`true\` (N = $N)" "N runs" "2N runs" "B/run"
printf '%-40s %12s %12s %10s\n' "abperf store (VACUUMed copy)" "$s1" "$s2" "$(per "$s1" "$s2")"
printf '%-40s %12s %12s %10s\n' "abperf export --format csv" "$c1" "$c2" "$(per "$c1" "$c2")"
printf '%-40s %12s %12s %10s\n' "hyperfine -N --export-json" "$h1" "$h2" "$(per "$h1" "$h2")"
