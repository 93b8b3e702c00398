#!/usr/bin/env bash
# The cost of committing a run into PostgreSQL on the same machine (issue 28: no more than 2 ms
# per run at the median), beside the same into an SQLite store.
#
# A private PostgreSQL cluster is made as tests/common/postgres.rs makes one (the highest
# /usr/lib/postgresql/*/bin, as the `postgres` user when root, 127.0.0.1 only, trust, a free
# port) but with PostgreSQL's default durability (fsync on); it is stopped and removed on exit.
#
# Per round, interleaved: `abperf run --db DSN -r 201 true`, `abperf run --db DSN -r 1 true`,
# the same two with commits that do not wait for the disk (the URL sets synchronous_commit=off:
# the server's WAL writer flushes them within a fraction of a second, as SQLite's store syncs at
# least once a second), and the same two on an SQLite store in a temporary directory. The per-run cost is
# (wall(r201) - wall(r1)) / 200 (fixed costs, the experiment and the end-of-run summary, cancel;
# what remains is running `true` and committing it). Prints it per round, the median over
# rounds for each store, and their difference (what PostgreSQL adds per run).
#
# Usage: benches/pg_commit.sh [ROUNDS]   (default 10)
set -euo pipefail
ROUNDS=${1:-10}
cd "$(dirname "$0")/.."
cargo build --release --quiet --locked
ABPERF=$PWD/target/release/abperf

# shellcheck source=benches/private_pg.sh
. benches/private_pg.sh
"$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres abperf
DSN=postgres://postgres@127.0.0.1:$PORT/abperf
DB=$TMP/sqlite/abperf.db
mkdir -p "$TMP/sqlite"
# The schemas exist before the first timed invocation.
"$ABPERF" run --db "$DSN" -r 1 true >/dev/null 2>&1
"$ABPERF" run --db "$DB" -r 1 true >/dev/null 2>&1

wall() { # store runs -> ns
    local t0 t1
    t0=$(date +%s%N)
    "$ABPERF" run --db "$1" -r "$2" --warmup 0 true >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $((t1 - t0))
}
per_run() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 200 / 1e6 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

ASYNC="$DSN?options=-c%20synchronous_commit%3Doff"
PG=()
PS=()
SQ=()
printf '%-6s %17s %24s %14s\n' round "PostgreSQL ms/run" "(synchronous_commit=off)" "SQLite ms/run"
for r in $(seq "$ROUNDS"); do
    p201=$(wall "$DSN" 201); p1=$(wall "$DSN" 1)
    y201=$(wall "$ASYNC" 201); y1=$(wall "$ASYNC" 1)
    s201=$(wall "$DB" 201); s1=$(wall "$DB" 1)
    PG+=("$(per_run "$p1" "$p201")")
    PS+=("$(per_run "$y1" "$y201")")
    SQ+=("$(per_run "$s1" "$s201")")
    printf '%-6s %17s %24s %14s\n' "$r" "${PG[-1]}" "${PS[-1]}" "${SQ[-1]}"
done
mp=$(printf '%s\n' "${PG[@]}" | median)
my=$(printf '%s\n' "${PS[@]}" | median)
ms=$(printf '%s\n' "${SQ[@]}" | median)
printf '%-6s %17s %24s %14s\n' median "$mp" "$my" "$ms"
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
echo "PostgreSQL $("$BIN/postgres" --version | awk '{print $3}'), fsync on: a run costs $(minus "$mp" "$ms") ms more than into SQLite at the median ($(minus "$my" "$ms") ms with synchronous_commit=off)"
