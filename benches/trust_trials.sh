#!/usr/bin/env bash
# Repeat issue 12's reliability trials against the real binary and count what held:
#   kill9     kill -9 of `run -k` at a random moment; then the store is readable, the
#             experiment shows as interrupted, and the knob gets its original back (in turn by
#             `run --resume` to completion, `doctor --restore`, plain `doctor`, or the next
#             experiment on the knob)
#   signal    SIGINT/SIGTERM/SIGHUP at a random moment, also while --pre/--post/--setup/--cleanup
#             run: exit 128+N, status interrupted, knob restored
#   pipe      `run -i -k ... 2>&1 | head -1`: exit 141, status interrupted, knob restored
#   share     8 concurrent processes on one store (3 run, 2 import, 3 read): none fails
#   knob      a second experiment on a busy knob fails at once naming the holder; with --wait
#             it runs after; the knob ends with its true original
#   resume    `run --resume` of a live experiment is refused naming its pid
#
# Usage: benches/trust_trials.sh [ROUNDS] [KIND...]   (ROUNDS default 10; ABPERF=path to use
# another binary, e.g. an older build, to see what did not hold before)
set -uo pipefail
ROUNDS=${1:-10}
shift || true
KINDS=${*:-kill9 signal pipe share knob resume}
cd "$(dirname "$0")/.."
if [ -z "${ABPERF:-}" ]; then
    cargo build --release --quiet
    ABPERF=$PWD/target/release/abperf
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The trials' knobs are ordinary files here: abperf accepts a knob outside the kernel's
# filesystems only under $ABPERF_TEST_KNOB_DIR (docs/security.md); the designs it approves go
# into a config directory of the trials' own.
export ABPERF_TEST_KNOB_DIR=$TMP XDG_CONFIG_HOME=$TMP/config
SEED000=$PWD/tests/data/seed000-time.txt
declare -A PASS FAIL
note_fail() { echo "  FAIL $1: $2" >&2; }

# A fresh trial directory: its own store and knob locks, a knob file holding 2000.
fresh() {
    T=$(mktemp -d -p "$TMP")
    export ABPERF_DB=$T/s.db ABPERF_LOCK_DIR=$T/locks
    echo 2000 > "$T/knob"
}
knob() { tr -d '\n' < "$T/knob"; }
status_of() { "$ABPERF" show "$1" --format json 2>/dev/null | grep -o '"status": *"[a-z]*"' | head -1 | grep -o '[a-z]*"$' | tr -d '"'; }
latest() { "$ABPERF" list 2>/dev/null | awk 'NR>1 {id=$1} END {print id}'; }
# Wait until experiment 1 has at least $1 runs stored (max 30 s).
wait_runs() {
    for _ in $(seq 300); do
        n=$("$ABPERF" list 2>/dev/null | awk 'NR==2 {split($6, a, "/"); print a[1]}')
        [ -n "$n" ] && [ "$n" -ge "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
rand_ms() { echo $(( $1 + RANDOM % ($2 - $1) )); }
pass() { PASS[$1]=$(( ${PASS[$1]:-0} + 1 )); }
fail() { FAIL[$1]=$(( ${FAIL[$1]:-0} + 1 )); note_fail "$1" "$2"; }

trial_kill9() {
    local i=$1 how
    fresh
    "$ABPERF" run -r 40 --warmup 0 -k "$T/knob=111,222" --pre 'sleep 0.01' 'sleep 0.03' >/dev/null 2>&1 &
    local pid=$!
    wait_runs 1 || { kill -9 $pid; wait $pid 2>/dev/null; fail kill9 "no run stored"; return; }
    sleep "0.$(rand_ms 0 900)"
    kill -9 $pid; wait $pid 2>/dev/null
    local st; st=$(status_of 1)
    [ "$st" = interrupted ] || { fail kill9 "status '$st' after kill -9"; return; }
    how=$(( i % 4 ))
    case $how in
        0) "$ABPERF" run --resume 1 >/dev/null 2>&1 || { fail kill9 "resume failed"; return; }
           st=$(status_of 1); [ "$st" = complete ] || { fail kill9 "resumed status '$st'"; return; } ;;
        1) "$ABPERF" doctor --restore >/dev/null 2>&1 || { fail kill9 "doctor --restore failed"; return; } ;;
        2) "$ABPERF" doctor --sample 0.05 >/dev/null 2>&1 ;;
        3) "$ABPERF" run -r 1 --warmup 0 -k "$T/knob=5,6" true >/dev/null 2>&1 \
               || { fail kill9 "next run failed"; return; } ;;
    esac
    [ "$(knob)" = 2000 ] || { fail kill9 "knob '$(knob)' after way $how"; return; }
    pass kill9
}

trial_signal() {
    local i=$1 sig where args
    fresh
    sig=$(( (i % 3 == 0) ? 2 : (i % 3 == 1) ? 15 : 1 ))
    where=$(( i % 5 ))
    case $where in
        0) args=(-r 40 'sleep 0.03') ;;
        1) args=(-r 5 --pre 'sleep 30' true) ;;
        2) args=(-r 5 --post 'sleep 30' true) ;;
        3) args=(-r 5 --setup 'sleep 30' true) ;;
        4) args=(-r 1 --cleanup 'sleep 30' true) ;;
    esac
    "$ABPERF" run --warmup 0 -k "$T/knob=111,222" "${args[@]}" >/dev/null 2>&1 &
    local pid=$!
    sleep "0.$(rand_ms 300 900)"
    kill -$sig $pid
    wait $pid; local rc=$?
    [ $rc -eq $((128 + sig)) ] || { fail signal "signal $sig at place $where: exit $rc"; return; }
    local st; st=$(status_of 1)
    [ "$st" = interrupted ] || { fail signal "signal $sig at place $where: status '$st'"; return; }
    [ "$(knob)" = 2000 ] || { fail signal "signal $sig at place $where: knob '$(knob)'"; return; }
    pass signal
}

trial_pipe() {
    fresh
    "$ABPERF" run -i -r 50 --warmup 0 -k "$T/knob=111,222" 'sleep 0.01; exit 1' 2>&1 | head -1 >/dev/null
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 141 ] || { fail pipe "exit $rc"; return; }
    local st; st=$(status_of 1)
    [ "$st" = interrupted ] || { fail pipe "status '$st'"; return; }
    [ "$(knob)" = 2000 ] || { fail pipe "knob '$(knob)'"; return; }
    pass pipe
}

trial_share() {
    fresh
    "$ABPERF" import --format time --new first "$SEED000" >/dev/null 2>&1
    local pids=() bad=0
    for j in 1 2 3; do "$ABPERF" run -r 30 --warmup 0 -N true >/dev/null 2>"$T/e$j" & pids+=($!); done
    for j in 4 5; do ( for _ in 1 2 3; do "$ABPERF" import --format time "$SEED000" >/dev/null || exit 1; done ) 2>"$T/e$j" & pids+=($!); done
    ( for _ in 1 2 3 4; do "$ABPERF" report 1 --resamples 0 >/dev/null || exit 1; done ) 2>"$T/e6" & pids+=($!)
    ( for _ in 1 2 3 4; do "$ABPERF" list >/dev/null || exit 1; done ) 2>"$T/e7" & pids+=($!)
    ( for _ in 1 2 3 4; do "$ABPERF" show 1 --runs >/dev/null || exit 1; done ) 2>"$T/e8" & pids+=($!)
    for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
    if [ $bad -eq 0 ]; then pass share; else fail share "$bad of 8 processes failed: $(cat "$T"/e* | head -2)"; fi
}

trial_knob() {
    fresh
    "$ABPERF" run -r 6 --warmup 0 -k "$T/knob=111,222" 'sleep 0.1' >/dev/null 2>&1 &
    local pid=$!
    wait_runs 1 || { fail knob "first did not start"; wait $pid; return; }
    local out; out=$("$ABPERF" run -r 1 --warmup 0 -k "$T/knob=7,8" true 2>&1); local rc=$?
    if [ $rc -ne 1 ] || ! grep -q "in use by abperf run of experiment 1.*pid $pid" <<<"$out"; then
        fail knob "second: exit $rc: $out"; wait $pid; return
    fi
    "$ABPERF" run -r 1 --warmup 0 --wait -k "$T/knob=7,8" true >/dev/null 2>&1 || { fail knob "--wait failed"; wait $pid; return; }
    wait $pid || { fail knob "first failed"; return; }
    [ "$(knob)" = 2000 ] || { fail knob "knob '$(knob)'"; return; }
    pass knob
}

trial_resume() {
    fresh
    "$ABPERF" run -r 50 --warmup 0 'sleep 0.05' >/dev/null 2>&1 &
    local pid=$!
    wait_runs 1 || { fail resume "did not start"; kill $pid; wait $pid; return; }
    local out; out=$("$ABPERF" run --resume 1 2>&1); local rc=$?
    kill -INT $pid; wait $pid
    if [ $rc -ne 1 ] || ! grep -q "still running in pid $pid" <<<"$out"; then
        fail resume "exit $rc: $out"; return
    fi
    pass resume
}

for k in $KINDS; do
    n=$ROUNDS
    [ "$k" = kill9 ] && n=$(( ROUNDS * 5 ))
    [ "$k" = signal ] && n=$(( ROUNDS * 6 ))
    echo "== $k: $n trials" >&2
    for i in $(seq "$n"); do "trial_$k" "$i"; done
done
echo
printf '%-8s %6s %6s\n' trial held failed
for k in $KINDS; do printf '%-8s %6s %6s\n' "$k" "${PASS[$k]:-0}" "${FAIL[$k]:-0}"; done
total_fail=0
for k in $KINDS; do total_fail=$(( total_fail + ${FAIL[$k]:-0} )); done
[ $total_fail -eq 0 ]
