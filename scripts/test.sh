#!/usr/bin/env bash
# Install what the tests need (Debian packages; root) and run the whole test suite.
# This is the command CI runs (.ci/run) and the one README.md shows.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS="gcc libc6-dev perl"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
cargo test --locked --all-targets
