#!/bin/sh
# End to end `abperf bisect` on this machine (docs/bisect.md): REPS seeded repetitions, each over
# a fresh repository of 64 commits of a small C program (benches/bisect_repo.sh) where one
# commit, at a seeded place, adds PERCENT% CPU work, and one commit does not compile; then
# NOCHANGE ranges without the change. Default settings (delta 0.05, alpha 0.05), metric user_ns.
# Prints one line per bisection: seed, planted commit, result, named commit, runs, seconds.
# Usage: benches/bisect_e2e.sh [REPS [PERCENT [NOCHANGE]]]   (ABPERF: the binary to use;
# BISECT_ARGS: more options for every bisection, e.g. --max-rounds 400; SEEDS: the repetitions
# to run instead of 1..REPS, e.g. "2 4")
set -eu
reps=${1:-5} percent=${2:-5} nochange=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
abperf=${ABPERF:-$here/../target/debug/abperf}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\).*/\1/p" "$2" | head -1; }
one() { # $1 seed, $2 planted (0: none), $3 broken
    repo=$work/repo-$1-$2
    "$here/bisect_repo.sh" "$repo" 64 "$2" "$3" "$percent"
    start=$(date +%s.%N)
    (cd "$repo" && "$abperf" bisect --db "$work/abperf.db" --good HEAD~64 --bad HEAD \
        --build 'cc -O2 -o prog prog.c' --metric user_ns --seed "$1" --format json ${BISECT_ARGS:-} \
        -- ./prog >"$work/out.json" 2>"$work/err.txt")
    end=$(date +%s.%N)
    named=$(sed -n '/"candidate"/,/}/s/^    "index": \([0-9]*\).*/\1/p' "$work/out.json")
    # An interval is shown as first..last.
    [ -n "$named" ] || named=$(tr -d ' \n' <"$work/out.json" |
        sed -n 's/.*"interval":\[{"index":\([0-9]*\),[^]]*{"index":\([0-9]*\),.*/\1..\2/p')
    printf '%-6s %-8s %-12s %-6s %-6s %.0f\n' "$1" "$2" "$(field result "$work/out.json")" \
        "${named:--}" "$(field runs "$work/out.json")" "$(echo "$end - $start" | bc)"
}
printf '%-6s %-8s %-12s %-6s %-6s %s\n' seed planted result named runs seconds
for i in ${SEEDS:-$(seq 1 "$reps")}; do
    planted=$(( (i * 37) % 62 + 2 ))
    broken=$(( planted > 32 ? 16 : 48 ))
    one "$i" "$planted" "$broken"
done
i=1
while [ "$i" -le "$nochange" ]; do
    one "$((100 + i))" 0 0
    i=$((i + 1))
done
