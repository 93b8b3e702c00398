#!/usr/bin/env bash
# What the server's foreign keys cost a PostgreSQL import (issue 46): the rows an `abperf import`
# of 2 x N ordered runs writes into its three bulk tables (slot, run, import_run: N x 2 each) are
# dumped with psql's `\copy ... to`, then loaded back with `\copy ... from` into a fresh database
# holding only the experiment and its variants, in one transaction that is rolled back, three
# ways per round: the schema as abperf made it before revision 2 (the tables' four foreign keys
# added inside the transaction); as abperf makes it now, without them; and also without the
# secondary unique indexes (run's id key kept). Prints the
# seconds of each COPY (psql's \timing: the server's work and the transfer, no abperf), median of
# ROUNDS rounds, the ways interleaved within a round, with the load. The SQLite import of the same
# rows is timed in the same rounds as the yardstick of issue 46's 3x target.
#
# Usage: benches/pg_import_keys.sh [ROUNDS]   (default 3)
#   N=5000 for a smaller experiment; ABPERF=/path/to/abperf (default: target/release/abperf, built).
set -euo pipefail
ROUNDS=${1:-3}
N=${N:-50000}
cd "$(dirname "$0")/.."
if [ -z "${ABPERF:-}" ]; then
    cargo build --release --quiet --locked
    ABPERF=$PWD/target/release/abperf
fi

# shellcheck source=benches/private_pg.sh
. benches/private_pg.sh
psql() { "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qAt "$@"; }

D=$TMP/dump
mkdir -p "$D"
[ "$(id -u)" = 0 ] && chown postgres: "$D"
python3 benches/ordered_runs.py "$N" >"$D/runs.csv"
psql -c "CREATE DATABASE imp" -c "CREATE DATABASE cl"
"$ABPERF" list --db "$D/empty.db" >/dev/null
"$ABPERF" store copy "$D/empty.db" "postgres://postgres@127.0.0.1:$PORT/cl" >/dev/null
"$ABPERF" store copy "$D/empty.db" "postgres://postgres@127.0.0.1:$PORT/imp" >/dev/null
"$ABPERF" import --db "postgres://postgres@127.0.0.1:$PORT/imp" --format csv "$D/runs.csv" >/dev/null
for t in experiment variant slot run import_run; do
    psql -d imp -c "\\copy (SELECT * FROM \"$t\") TO '$D/$t.txt'"
done

# The schema before revision 2 (issue 46): the per-run tables with their foreign keys.
KEYS="ALTER TABLE slot ADD FOREIGN KEY (experiment_id) REFERENCES experiment (id) ON DELETE CASCADE;
ALTER TABLE slot ADD FOREIGN KEY (variant_id) REFERENCES variant (id) ON DELETE CASCADE;
ALTER TABLE run ADD FOREIGN KEY (experiment_id) REFERENCES experiment (id) ON DELETE CASCADE;
ALTER TABLE import_run ADD FOREIGN KEY (run_id) REFERENCES run (id) ON DELETE CASCADE;"
NOFK="ALTER TABLE slot DROP CONSTRAINT IF EXISTS slot_experiment_id_fkey;
ALTER TABLE slot DROP CONSTRAINT IF EXISTS slot_variant_id_fkey;
ALTER TABLE run DROP CONSTRAINT IF EXISTS run_experiment_id_fkey;
ALTER TABLE import_run DROP CONSTRAINT IF EXISTS import_run_run_id_fkey;"
NOIDX="$NOFK
ALTER TABLE import_run DROP CONSTRAINT import_run_pkey;
ALTER TABLE run DROP CONSTRAINT run_experiment_id_seq_key;
ALTER TABLE slot DROP CONSTRAINT IF EXISTS slot_pkey;"
load_back() { # way, DDL before the copies -> "way seconds" into $TMP/rows
    local secs
    secs=$(
        psql -d cl -v ON_ERROR_STOP=1 2>&1 <<EOF | awk '/^Time:/ {s += $2} END {printf "%.3f", s / 1000}'
BEGIN;
\copy experiment from '$D/experiment.txt'
\copy variant from '$D/variant.txt'
$2
\timing on
\copy slot from '$D/slot.txt'
\copy run from '$D/run.txt'
\copy import_run from '$D/import_run.txt'
\timing off
ROLLBACK;
EOF
    )
    echo "$1 $secs" >>"$TMP/rows"
}
for r in $(seq "$ROUNDS"); do
    rm -f "$D"/s.db*
    "$ABPERF" list --db "$D/s.db" >/dev/null
    /usr/bin/time -f '%e' -o "$TMP/time" "$ABPERF" import --db "$D/s.db" --format csv "$D/runs.csv" >/dev/null
    echo "sqlite-import $(cat "$TMP/time")" >>"$TMP/rows"
    load_back keys "$KEYS"
    load_back no-foreign-keys "$NOFK"
    load_back no-keys-no-unique "$NOIDX"
    echo "round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 - "$TMP/rows" "$N" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    way, s = l.split()
    rows.setdefault(way, []).append(float(s))
print(f"2 x {int(sys.argv[2]):,} runs (3 x {2 * int(sys.argv[2]):,} rows), median of {len(rows['keys'])} rounds")
base = statistics.median(rows["sqlite-import"])
for way in ["sqlite-import", "keys", "no-foreign-keys", "no-keys-no-unique"]:
    m = statistics.median(rows[way])
    print(f"{way:18} {m:8.2f} s  {m / base:5.2f}x the SQLite import")
print("(sqlite-import: abperf's whole import, wall; the others: the server's COPY of the three tables)")
PY
echo "PostgreSQL $("$BIN/postgres" --version | awk '{print $3}'); load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
