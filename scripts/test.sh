#!/usr/bin/env bash
# Install what the tests need (Debian packages; root), check formatting and lints, and run the
# whole test suite. This is the test command README.md shows, and the one .ci/run runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# qemu/kmod/busybox: abperf vm; kbuild's test builds one directory of Debian's linux-source
# (unpacked once into the cache): make bc flex bison xz-utils linux-source
PKGS="gcc libc6-dev perl chromium qemu-system-x86 kmod busybox-static make bc flex bison xz-utils linux-source"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked --all-targets
