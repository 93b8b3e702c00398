# Sourced by the PostgreSQL benchmarks: a private server of this machine's newest PostgreSQL,
# in a temporary directory ($TMP), on a free loopback port ($PORT), trusting loopback; stopped
# and removed at exit. Defines BIN (the server's bin directory), TMP, PORT and as_pg.
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$BIN/initdb" ] || { echo "no PostgreSQL server here (/usr/lib/postgresql/*/bin/initdb)" >&2; exit 1; }
TMP=$(mktemp -d)
as_pg() { if [ "$(id -u)" = 0 ]; then (cd "$TMP" && runuser -u postgres -- "$@"); else "$@"; fi; }
stop_private_pg() {
    as_pg "$BIN/pg_ctl" -D "$TMP/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap stop_private_pg EXIT
[ "$(id -u)" = 0 ] && chown postgres: "$TMP"
as_pg "$BIN/initdb" -D "$TMP/data" -U postgres -A trust -E UTF8 --locale=C >/dev/null
echo "host all all 127.0.0.1/32 trust" >"$TMP/data/pg_hba.conf"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$BIN/pg_ctl" -D "$TMP/data" -l "$TMP/log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $TMP" start >/dev/null
