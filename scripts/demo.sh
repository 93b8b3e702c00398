#!/usr/bin/env bash
# A real A/B experiment on this machine: transparent huge pages `always` against `never` (a kernel
# knob, written, verified and restored) on a workload that touches 512 MiB of anonymous memory,
# counting page faults and TLB flushes per run. Needs root (the knob) and perl (the workload).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
DB=${ABPERF_DB:-$(mktemp -d)/demo.db}
exec ./target/release/abperf run --db "$DB" -r "${RUNS:-10}" \
    -k /sys/kernel/mm/transparent_hugepage/enabled=always,never \
    -e page-faults,tlb:tlb_flush,task-clock \
    --title "THP always vs never, 512 MiB touch" \
    "perl -e '\$x = \"a\" x (512 << 20)'"
