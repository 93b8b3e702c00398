#!/usr/bin/env bash
# The harness's own per-run cost, side by side with its peers: abperf run -N, hyperfine -N,
# perf stat -r and abperf run -N -e task-clock, each timed running `true` N and 2N times.
#
# Method (issue 13): ROUNDS interleaved rounds; in each round every tool runs N and then 2N runs
# (the tools' order rotates from round to round), and its marginal cost per run is
# (T(2N) - T(N)) / N, so start-up costs (abperf's environment snapshot and new store, hyperfine's
# set-up) cancel. The figure that counts is the median over rounds of the per-round ratio
# abperf/hyperfine (both measured within a minute of each other, under the same load); each
# tool's median marginal cost is printed beside it, with the load averages before and after.
# With perf, each invocation also runs under `perf stat -e task-clock` twice over: --no-inherit
# gives the tool's own CPU time, and with inheritance all of it, children included (abperf's spawn
# server, which forks every workload, and the workloads themselves: `true` costs every tool the
# same). CPU time per run is far less sensitive to the load of a shared machine than wall time;
# printed as a second and third table. The floor is benches/spawn_floor.c (posix_spawn + wait4
# of `true` in a C loop, nothing measured or stored; built with cc when there is one): every
# tool's per-run cost is also printed as a multiple of it. floor-fork is the same loop with fork +
# execvp: what a harness pays that keeps the workload's max RSS its own, as abperf's spawn server
# does (posix_spawn's child reports at least its spawner's resident set; see spawn_floor.c).
#
# Usage: benches/runner_overhead.sh [N] [ROUNDS]   (default 200 5; needs hyperfine, perf;
#        builds abperf --release unless ABPERF is set to a binary)
#        ABPERF_EXTRA="..." adds options to every abperf invocation (e.g. to compare a setting);
#        ABPERF_BASE=/path/to/abperf adds another abperf build as the tool "abperf-base"
#        (before/after figures from one interleaved session).
set -euo pipefail
N=${1:-200}
ROUNDS=${2:-5}
cd "$(dirname "$0")/.."
if [ -z "${ABPERF:-}" ]; then
    cargo build --release --quiet
    ABPERF=$PWD/target/release/abperf
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
have() { command -v "$1" >/dev/null; }
# shellcheck disable=SC2206
EXTRA=(${ABPERF_EXTRA:-})

# tool name -> command with RUNS as the placeholder for the run count
declare -A CMD
TOOLS=(abperf hyperfine)
CMD[abperf]="$ABPERF run --db DB -N -r RUNS --warmup 0 ${EXTRA[*]} true"
CMD[hyperfine]="hyperfine -N --runs RUNS --warmup 0 --style none true"
if have perf; then
    TOOLS+=(perf)
    CMD[perf]="perf stat -r RUNS true"
fi
TOOLS+=(abperf-e)
CMD[abperf-e]="$ABPERF run --db DB -N -r RUNS --warmup 0 -e task-clock ${EXTRA[*]} true"
if have cc && cc -O2 -o "$TMP/spawn_floor" benches/spawn_floor.c; then
    TOOLS+=(floor floor-fork)
    CMD[floor]="$TMP/spawn_floor RUNS true"
    # fork + exec + wait4: the floor of a harness that keeps the workload's max RSS its own
    CMD[floor-fork]="$TMP/spawn_floor --fork RUNS true"
fi
if [ -n "${ABPERF_BASE:-}" ]; then
    TOOLS+=(abperf-base)
    CMD[abperf-base]="$ABPERF_BASE run --db DB -N -r RUNS --warmup 0 ${EXTRA[*]} true"
fi
have hyperfine || { echo "hyperfine: not installed (apt-get install hyperfine)" >&2; exit 1; }

wall_us() { # runs -> "wall_us own_cpu_us all_cpu_us" of one invocation of $tool's command
    local c=${CMD[$tool]//RUNS/$1}
    c=${c//DB/$TMP/$tool.$1.db}
    local t0 t1 cpu=0 all=0
    local pre=()
    if have perf; then pre=(perf stat --no-inherit -x, -e task-clock -o "$TMP/own"); fi
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    "${pre[@]}" $c >/dev/null 2>&1 || { echo "failed: $c" >&2; exit 1; }
    t1=$(date +%s%N)
    if have perf; then
        cpu=$(awk -F, '/task-clock/ {printf "%d", $1 * 1000}' "$TMP/own")
        rm -f "$TMP/$tool.$1.db"*
        # shellcheck disable=SC2086
        perf stat -x, -e task-clock -o "$TMP/all" $c >/dev/null 2>&1
        all=$(awk -F, '/task-clock/ {printf "%d", $1 * 1000}' "$TMP/all")
    fi
    rm -f "$TMP/$tool.$1.db"*
    echo "$(( (t1 - t0) / 1000 )) $cpu $all"
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)   N=$N, $ROUNDS rounds, $(nproc) CPUs, $(uname -r)"
declare -A PER CPU ALL
printf '%-6s' round
for tool in "${TOOLS[@]}"; do printf ' %12s' "$tool"; done
printf ' %10s %10s' "ratio" "ratio -e"
[ -n "${ABPERF_BASE:-}" ] && printf ' %10s' "ratio base"
printf '\n'
for r in $(seq "$ROUNDS"); do
    n=${#TOOLS[@]}
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${TOOLS[$(( (i + r) % n ))]}"); done
    for tool in "${order[@]}"; do
        read -r a ca aa < <(wall_us "$N")
        read -r b cb ab < <(wall_us $((2 * N)))
        PER[$tool.$r]=$(( (b - a) / N ))
        CPU[$tool.$r]=$(( (cb - ca) / N ))
        ALL[$tool.$r]=$(( (ab - aa) / N ))
    done
    printf '%-6s' "$r"
    for tool in "${TOOLS[@]}"; do printf ' %9s us' "${PER[$tool.$r]}"; done
    h=${PER[hyperfine.$r]}
    ratio=$(awk -v a="${PER[abperf.$r]}" -v h="$h" 'BEGIN {printf "%.2f", a / h}')
    ratio_e=$(awk -v a="${PER[abperf-e.$r]}" -v h="$h" 'BEGIN {printf "%.2f", a / h}')
    echo "$ratio" >>"$TMP/ratio"
    echo "$ratio_e" >>"$TMP/ratio_e"
    printf ' %10s %10s' "$ratio" "$ratio_e"
    if [ -n "${ABPERF_BASE:-}" ]; then
        ratio_b=$(awk -v a="${PER[abperf-base.$r]}" -v h="$h" 'BEGIN {printf "%.2f", a / h}')
        echo "$ratio_b" >>"$TMP/ratio_b"
        printf ' %10s' "$ratio_b"
    fi
    printf '\n'
done
printf '%-6s' median
for tool in "${TOOLS[@]}"; do
    m=$(for r in $(seq "$ROUNDS"); do echo "${PER[$tool.$r]}"; done | median)
    printf ' %9s us' "$m"
done
printf ' %10s %10s' "$(median <"$TMP/ratio")" "$(median <"$TMP/ratio_e")"
[ -n "${ABPERF_BASE:-}" ] && printf ' %10s' "$(median <"$TMP/ratio_b")"
printf '\n'

echo "(per-run marginal cost (T(2N)-T(N))/N of \`true\`; ratio = abperf -N / hyperfine -N in the same"
echo " round, ratio -e = abperf -N -e task-clock / hyperfine -N, ratio base = abperf-base -N /"
echo " hyperfine -N; median row: medians over rounds)"
if have perf; then
    echo
    echo "own CPU time per run (task-clock of the tool's own process, --no-inherit; median over rounds):"
    for tool in "${TOOLS[@]}"; do
        m=$(for r in $(seq "$ROUNDS"); do echo "${CPU[$tool.$r]}"; done | median)
        printf '  %-10s %6s us\n' "$tool" "$m"
    done
    if [ -n "${ABPERF_BASE:-}" ]; then
        ratios=$(for r in $(seq "$ROUNDS"); do
            awk -v a="${CPU[abperf-base.$r]}" -v h="${CPU[hyperfine.$r]}" 'BEGIN {printf "%.2f\n", a / h}'
        done | median)
        echo "  abperf-base/hyperfine own CPU per run, median of per-round ratios: $ratios"
    fi
    ratios=$(for r in $(seq "$ROUNDS"); do
        awk -v a="${CPU[abperf.$r]}" -v h="${CPU[hyperfine.$r]}" 'BEGIN {printf "%.2f\n", a / h}'
    done | median)
    echo "  abperf/hyperfine own CPU per run, median of per-round ratios: $ratios"
    echo
    echo "all CPU time per run (task-clock with children: abperf's spawn server and every tool's"
    echo "\`true\` counted; median over rounds; x floor = median of per-round ratios to the C loop):"
    for tool in "${TOOLS[@]}"; do
        m=$(for r in $(seq "$ROUNDS"); do echo "${ALL[$tool.$r]}"; done | median)
        x=""
        if [ -n "${ALL[floor.1]:-}" ]; then
            x=$(for r in $(seq "$ROUNDS"); do
                awk -v a="${ALL[$tool.$r]}" -v f="${ALL[floor.$r]}" 'BEGIN {printf "%.2f\n", a / f}'
            done | median)
            x="  ${x}x floor"
        fi
        printf '  %-10s %6s us%s\n' "$tool" "$m" "$x"
    done
    ratios=$(for r in $(seq "$ROUNDS"); do
        awk -v a="${ALL[abperf.$r]}" -v h="${ALL[hyperfine.$r]}" 'BEGIN {printf "%.2f\n", a / h}'
    done | median)
    echo "  abperf/hyperfine all CPU per run, median of per-round ratios: $ratios"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
