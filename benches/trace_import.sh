#!/usr/bin/env bash
# `abperf trace import` of a large text capture: peak memory (max RSS) and lines per CPU-second
# (user + sys). The capture is tests/data/small-capture.txt repeated with advancing timestamps
# until it holds about SIZE_MB, written to a temporary directory and removed afterwards.
# `wc -l` on the same file is shown as the floor (reading the file, nothing parsed).
# Usage: benches/trace_import.sh [SIZE_MB]
#   ABPERF_BEFORE=/path/to/older/abperf adds its row (e.g. a build that reads the whole file).
set -euo pipefail
SIZE_MB=${1:-400}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - "$TMP/big.txt" "$SIZE_MB" <<'PY'
import re, sys
out, size = sys.argv[1], int(sys.argv[2]) << 20
lines = open("tests/data/small-capture.txt").read().splitlines()
head = [l for l in lines if l.startswith("#")]
body = [l for l in lines if not l.startswith("#")]
ts = re.compile(r"\] (?:\S+ )?(\d+):")
stamps = [int(m.group(1)) for l in body if (m := ts.search(l))]
step = max(stamps) - min(stamps) + 1000
with open(out, "w") as f:
    f.write("\n".join(head) + "\n")
    k = 0
    while f.tell() < size:
        off = k * step
        f.write("\n".join(ts.sub(lambda m: m.group(0).replace(m.group(1), str(int(m.group(1)) + off)), l) for l in body) + "\n")
        k += 1
PY
LINES=$(wc -l <"$TMP/big.txt")
printf 'capture: %d MB, %d lines\n' "$(( $(stat -c %s "$TMP/big.txt") >> 20 ))" "$LINES"
measure() { # label cmd... -> one row: max RSS, CPU s, lines per CPU-second, wall
    local label=$1; shift
    /usr/bin/time -f '%M %U %S %e' -o "$TMP/time" "$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; return 1; }
    read -r rss user sys wall <"$TMP/time"
    python3 -c "import sys; l,rss,u,s,w=sys.argv[1:6]; c=float(u)+float(s); print(f'{sys.argv[6]:<40} {int(rss)//1024:>8} MB {c:>8.2f} s {int(l)/c/1e6:>8.2f} M {float(w):>7.2f} s')" "$LINES" "$rss" "$user" "$sys" "$wall" "$label"
}
printf '%-40s %11s %10s %10s %9s\n' "text import" "max RSS" "CPU" "lines/CPU-s" "wall"
measure "wc -l (reading only, floor)" wc -l "$TMP/big.txt"
if [ -n "${ABPERF_BEFORE:-}" ]; then
    measure "abperf before (ABPERF_BEFORE)" "$ABPERF_BEFORE" trace import -q --db "$TMP/before.db" "$TMP/big.txt"
fi
measure "abperf trace import (streamed)" "$ABPERF" trace import -q --db "$TMP/after.db" "$TMP/big.txt"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
