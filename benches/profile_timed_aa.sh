#!/usr/bin/env bash
# Do profiled runs change the timed runs? (issue 44) ROUNDS rounds, each one experiment with
# --profile and one without (their order alternating round by round), of the same command
# (tests/programs/hot_cold.c), -r RUNS timed runs each. Every timed run is exported (CSV) and
# imported into one experiment with two variants, `with-profile` and `without`, which `compare`
# judges: an A/A, so the verdict should be NO DIFFERENCE (or inconclusive). Also prints the
# cost per profiled run from the experiments with --profile.
# Usage: benches/profile_timed_aa.sh [ROUNDS [RUNS]]   (default 6 and 4)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-6}"
runs="${2:-4}"
abperf="${ABPERF:-target/debug/abperf}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -fno-omit-frame-pointer -o "$tmp/hc" tests/programs/hot_cold.c
cmd="$tmp/hc 300 100000 100000"
db="$tmp/runs.db"
one() {  # $1: with|without, $2: seed
    local extra=()
    [ "$1" = with ] && extra=(--profile --profile-runs "$runs")
    "$abperf" run --db "$db" --seed "$2" "${extra[@]}" -r "$runs" -n "$1" "$cmd" >/dev/null 2>&1
}
for i in $(seq 1 "$rounds"); do
    if [ $((i % 2)) = 1 ]; then one with "$i"; one without "$i"; else one without "$i"; one with "$i"; fi
done
echo "variant,wall_ns [ns],user_ns [ns]" > "$tmp/all.csv"
for id in $(seq 1 $((2 * rounds))); do
    "$abperf" export "$id" --db "$db" --format csv > "$tmp/e.csv"
    python3 - "$tmp/e.csv" >> "$tmp/all.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("warmup") in ("true", "1", "True"):
        continue
    print("%s,%s,%s" % (r["variant"], r["wall_ns [ns]"], r["user_ns [ns]"]))
PY
done
"$abperf" import --db "$tmp/aa.db" --format csv --new "timed runs with and without --profile" "$tmp/all.csv" >/dev/null
"$abperf" compare 1 --db "$tmp/aa.db" --metric wall_ns --metric user_ns --baseline without
for id in $(seq 1 $((2 * rounds))); do
    "$abperf" report "$id" --db "$db" 2>/dev/null | grep 'profiled runs of' || true
done
