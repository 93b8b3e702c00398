#!/usr/bin/env bash
# Install what the tests need (Debian packages; root), check formatting and lints, and run the
# whole test suite. This is the test command README.md shows, and the one .ci/run runs.
#
# Packages: gcc and libc6-dev (tests compile small C workloads), perl (a workload), and
# chromium-headless-shell (the HTML report is loaded in a real browser; set ABPERF_CHROMIUM to
# use another Chromium/Chrome binary instead). Only what is missing is installed, without
# recommended packages, and nothing already installed is upgraded: if a package would need an
# upgrade of something installed, this script stops and says which.
set -euo pipefail
cd "$(dirname "$0")/.."
# qemu-system-x86, kmod, busybox-static: abperf vm (kernels booted under QEMU); make, bc, flex,
# bison, xz-utils, linux-source: the kbuild workload's test builds one directory of Debian's
# linux-source (unpacked once into the cache). time: GNU time, the max RSS test's reference;
# util-linux: unshare, for the ownership tests' private mount (store on read-only media).
PKGS="gcc libc6-dev perl qemu-system-x86 kmod busybox-static make bc flex bison xz-utils linux-source time util-linux"
if [ -z "${ABPERF_CHROMIUM:-}" ]; then
    PKGS="$PKGS chromium-headless-shell"
fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "test.sh: missing packages:$missing (run as root to install them)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    echo "test.sh: installing:$missing (--no-install-recommends)" >&2
    apt-get update -qq
    opts="--no-install-recommends --no-upgrade -o APT::Get::Upgrade=false"
    # shellcheck disable=SC2086
    plan=$(apt-get install -s $opts $missing)
    upgrades=$(printf '%s\n' "$plan" | awk '/^Inst [^ ]+ \[/ {print $2}' | tr '\n' ' ')
    if [ -n "$upgrades" ]; then
        echo "test.sh: installing$missing would upgrade installed packages: $upgrades" >&2
        echo "test.sh: not done; upgrade them yourself (apt-get install $upgrades) or install the" >&2
        echo "test.sh: packages above by hand, then run this script again" >&2
        exit 1
    fi
    echo "test.sh: $(printf '%s\n' "$plan" | grep -c '^Inst ') package(s) to install" >&2
    # shellcheck disable=SC2086
    apt-get install -y -qq $opts $missing
fi
cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked --all-targets --no-fail-fast
