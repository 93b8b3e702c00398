#!/usr/bin/env bash
# The shell wrapper's toll: the wall time abperf reports for `sleep 0.001` by default (--shell
# auto: exec'd directly, no shell syntax), with -N, and with --shell sh (always `sh -c`, the old
# default), against the truth: a small C program that starts `sleep 0.001` with posix_spawn and
# reaps it with wait4, timed with clock_gettime(CLOCK_MONOTONIC). With hyperfine installed, its
# default (which subtracts its shell's spawn time) and -N are shown too. Interleaved rounds of
# RUNS runs each; per tool the median of its per-round medians, that minus the truth's, and the
# median over rounds of (its round median - the truth's round median), which host drift between
# rounds does not move.
# Usage: benches/shell_wrapper.sh [ROUNDS] [RUNS]
#   ABPERF_BEFORE=/path/to/older/abperf adds its default (an abperf whose default was sh -c).
set -euo pipefail
ROUNDS=${1:-7}
RUNS=${2:-60}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/truth.c" <<'EOF'
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
extern char **environ;
static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    long *t = calloc(n, sizeof *t);
    char *args[] = {"sleep", "0.001", NULL};
    for (int i = -1; i < n; i++) { /* one warm-up */
        struct timespec a, b;
        pid_t pid;
        int st;
        struct rusage ru;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (posix_spawnp(&pid, "sleep", NULL, NULL, args, environ) != 0) return 1;
        if (wait4(pid, &st, 0, &ru) != pid || st != 0) return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (i >= 0) t[i] = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
    }
    qsort(t, n, sizeof *t, cmp);
    printf("%.1f\n", n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2.0);
    return 0;
}
EOF
cc -O2 -o "$TMP/truth" "$TMP/truth.c"

# Median wall (ns) of the timed runs of the latest experiment in store $1.
stored_median() {
    "$2" export latest --db "$1" --format json |
        jq '[.runs[] | select(.warmup | not) | .metrics.wall_ns] | sort |
            if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end'
}
hyperfine_median() {
    hyperfine "$@" -r "$RUNS" --warmup 1 --style none --export-json "$TMP/h.json" 'sleep 0.001' >/dev/null 2>&1
    jq '.results[0].median * 1e9' "$TMP/h.json"
}

declare -A M
labels=("truth (posix_spawn + wait4)" "abperf (default: direct)" "abperf -N" "abperf --shell sh")
[ -n "${ABPERF_BEFORE:-}" ] && labels+=("abperf before (sh -c)")
if command -v hyperfine >/dev/null; then labels+=("hyperfine (shell, subtracted)" "hyperfine -N"); fi
one() {
    local db="$TMP/$RANDOM.db"
    case "$1" in
        "truth (posix_spawn + wait4)") "$TMP/truth" "$RUNS" ;;
        "abperf (default: direct)") "$ABPERF" run --db "$db" -r "$RUNS" 'sleep 0.001' >/dev/null 2>&1 && stored_median "$db" "$ABPERF" ;;
        "abperf -N") "$ABPERF" run --db "$db" -N -r "$RUNS" 'sleep 0.001' >/dev/null 2>&1 && stored_median "$db" "$ABPERF" ;;
        "abperf --shell sh") "$ABPERF" run --db "$db" --shell sh -r "$RUNS" 'sleep 0.001' >/dev/null 2>&1 && stored_median "$db" "$ABPERF" ;;
        "abperf before (sh -c)") "$ABPERF_BEFORE" run --db "$db" -r "$RUNS" 'sleep 0.001' >/dev/null 2>&1 && stored_median "$db" "$ABPERF_BEFORE" ;;
        "hyperfine (shell, subtracted)") hyperfine_median ;;
        "hyperfine -N") hyperfine_median -N ;;
    esac
    rm -f "$db" "$db"-*
}
for _ in $(seq "$ROUNDS"); do
    for l in "${labels[@]}"; do
        M[$l]="${M[$l]:-} $(one "$l")"
    done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END{print (NR%2?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2)}'; }
truth=$(median "${M[${labels[0]}]}")
read -ra tv <<<"${M[${labels[0]}]}"
printf '%-32s %10s %11s %14s   (sleep 0.001, %s rounds x %s runs)\n' "tool" "median ms" "- truth ms" "paired - truth" "$ROUNDS" "$RUNS"
for l in "${labels[@]}"; do
    m=$(median "${M[$l]}")
    read -ra v <<<"${M[$l]}"
    d=""
    for i in "${!v[@]}"; do d="$d $(awk -v a="${v[$i]}" -v b="${tv[$i]}" 'BEGIN{print a-b}')"; done
    p=$(median "$d")
    awk -v l="$l" -v m="$m" -v t="$truth" -v p="$p" 'BEGIN{printf "%-32s %10.3f %+11.3f %+14.3f\n", l, m/1e6, (m-t)/1e6, p/1e6}'
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
