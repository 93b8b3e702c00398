#!/usr/bin/env bash
# A real difference found across separate micro experiments (issue 26): two experiments of
# `abperf micro --quick` (default settings, 4 invocations each; or --invocations N), compared
# with the invocations as the unit, where something really changed between them:
#   sys_enter: the raw_syscalls:sys_enter tracepoint enabled for B (tracefs mounted in a private
#              mount namespace; the event itself is global while B runs, then disabled again):
#              every syscall takes the traced entry path (syscall, signal).
#   busy-remote: B runs with a busy loop pinned to the remote CPU (the other side of shootdowns
#              and ping-pong): IPIs reach an awake CPU (tlb-shootdown, ctxsw).
# Usage: benches/micro_ab_separate.sh [INVOCATIONS]   (root, util-linux unshare, python3)
#   ABPERF_BIN=target/debug/abperf uses that binary instead of building a release one.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
if [ -n "${ABPERF_BIN:-}" ]; then
    bin="$ABPERF_BIN"
else
    cargo build --release --quiet
    bin="$CARGO_TARGET_DIR/release/abperf"
fi
bin=$(realpath "$bin")
tmp=$(mktemp -d)
busy=""
cleanup() {
    [ -z "$busy" ] || kill -9 "$busy" 2> /dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
inv=()
[ -z "${1:-}" ] || inv=(--invocations "$1")
id=0
pair() { # title, then B's command prefix (may be empty) -- benchmarks
    local title=$1
    shift
    local pre=()
    while [ "$1" != "--" ]; do pre+=("$1"); shift; done
    shift
    local load t0 t1
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    t0=$(date +%s)
    "$bin" micro --quick "${inv[@]}" "$@" --db "$tmp/ab.db" > /dev/null 2>&1
    "${pre[@]}" "$bin" micro --quick "${inv[@]}" "$@" --db "$tmp/ab.db" > /dev/null 2>&1
    t1=$(date +%s)
    local a=$((id + 1)) b=$((id + 2))
    id=$b
    "$bin" compare "$a" "$b" --db "$tmp/ab.db" --format json > "$tmp/c$b.json"
    python3 benches/micro_summary.py "$tmp/c$b.json" "A/B $title" "$((t1 - t0))" | sed "1s|\$| [load $load]|"
}
# B in a private mount namespace with tracefs, the event enabled around the run.
cat > "$tmp/traced.sh" <<'SH'
#!/bin/sh
set -e
mount -t tracefs nodev /sys/kernel/tracing
e=/sys/kernel/tracing/events/raw_syscalls/sys_enter/enable
echo 1 > "$e"
rc=0
"$@" || rc=$?
echo 0 > "$e"
exit $rc
SH
chmod +x "$tmp/traced.sh"
pair sys_enter unshare -m "$tmp/traced.sh" -- syscall signal
taskset -c 1 sh -c 'while :; do :; done' &
busy=$!
kill -STOP "$busy"
cat > "$tmp/busy.sh" <<SH
#!/bin/sh
kill -CONT $busy
rc=0
"\$@" || rc=\$?
kill -STOP $busy
exit \$rc
SH
chmod +x "$tmp/busy.sh"
pair busy-remote "$tmp/busy.sh" -- tlb-shootdown ctxsw
