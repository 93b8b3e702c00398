#!/usr/bin/env bash
# `abperf trace import` of a large binary raw capture (the per-CPU ring-buffer pages that
# `trace record --keep-raw` writes): events per CPU-second (user + sys) and max RSS, over
# several interleaved rounds (medians). The capture is tests/data/small-capture.raw with each
# CPU's pages repeated until it holds about SIZE_MB, written to a temporary directory.
# Floor, in the same rounds: `cat FILE > /dev/null` (reading the file, nothing decoded).
# trace-cmd cannot read abperf's raw files, so it is no peer here (benches/trace_bench.sh
# times `trace-cmd report` on a capture of its own).
# Usage: benches/raw_import.sh [SIZE_MB] [ROUNDS]   (defaults 300, 5)
#   ABPERF_BEFORE=/path/to/older/abperf adds its rows.
#   RAW=FILE imports FILE instead (a real capture, e.g. `abperf trace record -q --no-cost
#   --buffer-kib 262144 --keep-raw FILE -- abperf workload exec flush-storm ops=400000`:
#   distinct durations, unlike the repeated small capture).
set -euo pipefail
SIZE_MB=${1:-300}
ROUNDS=${2:-5}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [ -n "${RAW:-}" ]; then
    ln -s "$(realpath "$RAW")" "$TMP/big.raw"
else
python3 - tests/data/small-capture.raw "$TMP/big.raw" "$SIZE_MB" <<'PY'
import struct, sys
src, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20
d = open(src, "rb").read()
magic = b"ABPERF-TRACE-RAW1\n"
assert d.startswith(magic)
h = len(magic)
meta_end = h + 4 + struct.unpack("<I", d[h:h + 4])[0]
blocks, p = [], meta_end
while p < len(d):
    cpu, n = struct.unpack("<IQ", d[p:p + 12])
    blocks.append((cpu, d[p + 12:p + 12 + n]))
    p += 12 + n
k = max(1, size // sum(len(b) for _, b in blocks))
with open(out, "wb") as f:
    f.write(d[:meta_end])
    for cpu, b in blocks:
        f.write(struct.pack("<IQ", cpu, len(b) * k))
        for _ in range(k):
            f.write(b)
PY
fi
EVENTS=$("$ABPERF" trace import --db "$TMP/count.db" "$TMP/big.raw" 2>/dev/null | sed -n 's/^capture [0-9]* (import): \([0-9,]*\) events.*/\1/p' | tr -d ,)
rm -f "$TMP"/count.db*
printf 'capture: %d MB, %d events\n' "$(( $(stat -L -c %s "$TMP/big.raw") >> 20 ))" "$EVENTS"
row() { # label cmd... -> "label wall cpu rss"
    local label=$1; shift
    /usr/bin/time -f '%e %U %S %M' -o "$TMP/time" "$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; return 1; }
    read -r wall user sys rss <"$TMP/time"
    echo "$label $wall $user $sys $rss" >>"$TMP/rows"
    rm -f "$TMP"/db*
}
for r in $(seq "$ROUNDS"); do
    row "cat_>/dev/null_(floor)" sh -c "cat '$TMP/big.raw' >/dev/null"
    row "abperf_trace_import" "$ABPERF" trace import -q --db "$TMP/db" "$TMP/big.raw"
    [ -n "${ABPERF_BEFORE:-}" ] && row "abperf_before" "$ABPERF_BEFORE" trace import -q --db "$TMP/db" "$TMP/big.raw"
done
python3 - "$TMP/rows" "$EVENTS" <<'PY'
import statistics, sys
events = int(sys.argv[2])
rows = {}
for l in open(sys.argv[1]):
    label, wall, user, sys_, rss = l.split()
    rows.setdefault(label, []).append((float(wall), float(user) + float(sys_), int(rss)))
print(f"{'raw import':<26} {'max RSS':>8} {'CPU s':>7} {'M events/CPU-s':>15} {'wall s':>7}  (median of {len(next(iter(rows.values())))} rounds)")
for label, v in rows.items():
    med = lambda i: statistics.median(x[i] for x in v)
    cpu = med(1)
    print(f"{label.replace('_', ' '):<26} {med(2)/1024:>5.0f} MB {cpu:>7.3f} {events/max(cpu, 1e-3)/1e6:>15.1f} {med(0):>7.2f}")
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
