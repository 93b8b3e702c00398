#!/usr/bin/env bash
# Whether two abperf binaries read the same store the same way: OLD makes a store (two run
# experiments, one import), then OLD and NEW each print list, show, compare, report and export
# of it, and the outputs are diffed. With a PostgreSQL URL the store is copied there (by OLD)
# and read from there too. For a change that must keep these outputs byte-identical (a store
# refactoring): exit 0 when every output is the same, 1 with the diff otherwise.
#
#   scripts/same_outputs.sh OLD_ABPERF NEW_ABPERF [postgres://USER@HOST/EMPTY_DATABASE]
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,8p "$0" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2") dsn=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
db="$work/abperf.db"
"$old" run --db "$db" -r 4 --seed 1 -n a -n b true 'sleep 0.001' >/dev/null 2>&1
"$old" run --db "$db" -r 3 --seed 2 -L n=1,2 'sleep 0.00{n}' >/dev/null 2>&1
"$old" import --db "$db" --format time "$here/tests/data/seed000-time.txt" >/dev/null 2>&1
# Every reading command, one per line (the store given as --db STORE).
readers=(
    "list"
    "show 1"
    "show 2"
    "show 3"
    "compare 1"
    "compare 2"
    "compare 1 2"
    "report 1 --format md"
    "export 1 --format csv"
    "export 2 --format json"
    "export 3 --format csv"
)
status=0
outputs() { # BINARY STORE DIR
    mkdir -p "$3"
    local i=0 r
    for r in "${readers[@]}"; do
        # shellcheck disable=SC2086
        "$1" $r --db "$2" >"$3/$i.out" 2>"$3/$i.err" || echo "exit $?" >>"$3/$i.err"
        i=$((i + 1))
    done
}
compare_on() { # STORE NAME
    outputs "$old" "$1" "$work/old-$2"
    outputs "$new" "$1" "$work/new-$2"
    if diff -r "$work/old-$2" "$work/new-$2"; then
        echo "same_outputs: $2: ${#readers[@]} commands, outputs identical"
    else
        echo "same_outputs: $2: outputs differ (above)"
        status=1
    fi
}
compare_on "$db" sqlite
if [ -n "$dsn" ]; then
    "$old" store copy "$db" "$dsn" >/dev/null
    compare_on "$dsn" postgres
fi
exit "$status"
