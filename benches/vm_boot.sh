#!/usr/bin/env bash
# Cost of one boot under `abperf vm run` for every kernel in the cache: seconds from QEMU's start
# to the command's start (boot_seconds, as the host measures it), the guest's uptime then, and
# the wall time of a whole boot of `true`. With `vng` (virtme-ng) on PATH, a boot of the same
# kernel under `vng --force-9p --run KERNEL --exec true` is timed right after each, interleaved.
# Usage: benches/vm_boot.sh [ROUNDS] [tcg|kvm]   (fetch kernels first: abperf vm fetch-kernel PKG)
set -euo pipefail
ROUNDS=${1:-3}
ACCEL=${2:-tcg}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
KERNELS=$("$ABPERF" vm kernels --format json | python3 -c \
    'import json,sys; [print(k["vmlinuz"]) for k in json.load(sys.stdin)]')
[ -n "$KERNELS" ] || { echo "no kernels in the cache: abperf vm fetch-kernel PACKAGE" >&2; exit 1; }
PATH=$PATH:/usr/lib/qemu   # virtme-ng looks for virtiofsd there
now() { date +%s.%N; }
printf '%-28s %8s %8s %8s %8s %6s\n' kernel boot_s uptime total vng_s load
for _ in $(seq "$ROUNDS"); do
    for k in $KERNELS; do
        t0=$(now)
        out=$("$ABPERF" vm run --accel "$ACCEL" --kernel "$k" --format json true 2>/dev/null)
        t1=$(now)
        read -r boot up < <(grep '"booted"' <<<"$out" | python3 -c \
            'import json,sys; b=json.load(sys.stdin)["boot"]; print(b["boot_seconds"], b["guest_uptime"])')
        vng_s=-
        if command -v vng >/dev/null; then
            flag=--disable-kvm
            [ "$ACCEL" = kvm ] && flag=
            t2=$(now)
            vng --force-9p --run "$k" $flag --cpus 2 --memory 1G --exec true >/dev/null 2>&1 || true
            vng_s=$(printf '%.2f' "$(echo "$(now) - $t2" | bc)")
        fi
        printf '%-28s %8.2f %8.2f %8.2f %8s %6s\n' "$(basename "$k")" "$boot" "$up" \
            "$(echo "$t1 - $t0" | bc)" "$vng_s" "$(cut -d' ' -f1 /proc/loadavg)"
    done
done
