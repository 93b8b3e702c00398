#!/usr/bin/env bash
# `abperf history` on a 10,000-experiment SQLite store: the time to answer one series (--series)
# and every series, and the bytes of the store.
#
# The store: one real experiment (`abperf run`, 10 runs and a warm-up of `true`), cloned in SQL
# into N experiments labelled v=1..N whose variant commands fall into 100 series of N/100
# points (`true 0` .. `true 99`), each run's times scaled by a seeded noise and, from v > N/2, by
# 1.2 (a step in every series). Runs are cloned whole: 11 rows per experiment.
#
# Usage: benches/history_scale.sh [N] [ABPERF]   (needs: sqlite3; default N = 10000,
#        ABPERF = target/release/abperf, built when missing)
set -euo pipefail
N=${1:-10000}
cd "$(dirname "$0")/.."
ABPERF=${2:-}
if [ -z "$ABPERF" ]; then
    [ -x target/release/abperf ] || cargo build --release --quiet
    ABPERF=$PWD/target/release/abperf
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DB=$TMP/h.db

"$ABPERF" run --db "$DB" --runs 10 --warmup 1 --label v=1 'true 1' >/dev/null 2>&1
sqlite3 "$DB" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
CREATE TEMP TABLE n AS
    WITH RECURSIVE k(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM k WHERE i < $N) SELECT i FROM k;
INSERT INTO experiment (id, name, kind, created, command_line, design, seed, environment, status, labels)
    SELECT n.i, e.name, e.kind, e.created, e.command_line, e.design, e.seed, e.environment, e.status,
           json_object('v', CAST(n.i AS TEXT))
    FROM experiment e, n WHERE e.id = 1;
INSERT INTO variant (experiment_id, position, name, command, parameters, knobs, workload)
    SELECT n.i, v.position, 'true ' || (n.i % 100), 'true ' || (n.i % 100), v.parameters, v.knobs, v.workload
    FROM variant v, n WHERE v.experiment_id = 1;
INSERT INTO run (experiment_id, seq, variant, warmup, status, exit_code, signal, started_ns,
                 duration_ns, excluded, wall_ns, user_ns, sys_ns, maxrss_kib, minflt, majflt,
                 nvcsw, nivcsw, inblock, oublock)
    SELECT n.i, r.seq, r.variant, r.warmup, r.status, r.exit_code, r.signal, r.started_ns,
           r.duration_ns, r.excluded,
           CAST(r.wall_ns * (1.0 + 0.2 * (n.i > $N / 2) + ((n.i * 7919 + r.seq * 104729) % 1000) / 20000.0) AS INTEGER),
           r.user_ns, r.sys_ns, r.maxrss_kib, r.minflt, r.majflt, r.nvcsw, r.nivcsw, r.inblock, r.oublock
    FROM run r, n WHERE r.experiment_id = 1;
UPDATE variant SET name = 'true 1', command = 'true 1' WHERE experiment_id = 1;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL

echo "store: $(sqlite3 "$DB" 'SELECT count(*) FROM experiment') experiments, $(sqlite3 "$DB" 'SELECT count(*) FROM run') runs, $(stat -c %s "$DB") bytes"
t() { # label, command... -> seconds of wall time
    local s e
    s=$(date +%s.%N)
    "${@:2}" >"$TMP/out.txt"
    e=$(date +%s.%N)
    printf '%-34s %6.2f s\n' "$1" "$(echo "$e - $s" | bc)"
}
t "history --series 1 (one series)" "$ABPERF" history --db "$DB" --order-by v --series 1
head -1 "$TMP/out.txt"
grep -m1 -- '--- change' "$TMP/out.txt" || true
t "history (every series, BH)" "$ABPERF" history --db "$DB" --order-by v
head -1 "$TMP/out.txt"
echo "changes found: $(grep -c '^  at ' "$TMP/out.txt" || true)"
