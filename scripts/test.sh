#!/usr/bin/env bash
# Install what the tests need (Debian packages; root), check formatting and lints, and run the
# whole test suite. This is the test command README.md shows, and the one .ci/run runs.
#
# Installs only what is missing, without recommended packages, and never upgrades an installed
# package: a package whose install would need an upgrade is left out (named on stderr), and the
# tests that need it report themselves skipped. Debian's kernel source, which the kbuild test
# builds from, is downloaded and unpacked into abperf's cache, not installed: installing
# linux-source pulls the newest kernel headers, newer than the image's whenever Debian has moved
# on. Skipped tests are listed and counted at the end (libtest shows them as ok).
set -euo pipefail
cd "$(dirname "$0")/.."
# gcc, libc6-dev, perl: workloads. qemu-system-x86, kmod, busybox-static: abperf vm (kernels
# booted under QEMU). make, bc, flex, bison, xz-utils: the kbuild workload's test. time: GNU
# time, the max RSS test's reference. util-linux: unshare, for private mount namespaces.
# kexec-tools, e2fsprogs: the boot loop's test machine (kexec between kernels inside a QEMU
# guest whose ext4 disk image is made and read on the host); systemd: systemd-analyze verify of
# the loop's unit. ovmf, fdisk, dosfstools, mtools: the reboot-mode test's machine (UEFI firmware,
# and a GPT disk image whose EFI system partition is made without mounting it; systemd-boot is
# downloaded into abperf's cache by the test, never installed).
# chromium-headless-shell: the HTML report loaded in a real browser (ABPERF_CHROMIUM=PATH uses
# another Chromium and installs none).
# ccache, libelf-dev: kernels built from git (`--kernel git:REV`, tests/kernel_git.rs): libelf-dev
# for objtool, which every x86_64 kernel build runs; ccache keeps compiled objects between runs
# (in abperf's cache) so a neighbouring commit or a rebuilt configuration costs seconds.
# dropbear-bin, ansible-core: the fleet tests' hosts and engine (abperf fleet run). The hosts are
# dropbear SSH servers on 127.0.0.2-4, not OpenSSH's sshd: installing openssh-server would
# upgrade the installed openssh-client, which the no-upgrade rule above forbids; ansible-core
# (Debian's, installs without upgrades) drives them through the installed OpenSSH client.
PKGS="gcc libc6-dev perl qemu-system-x86 kmod busybox-static make bc flex bison xz-utils time util-linux kexec-tools e2fsprogs systemd ovmf fdisk dosfstools mtools dropbear-bin ansible-core ccache libelf-dev"
if [ -z "${ABPERF_CHROMIUM:-}" ]; then
    PKGS="$PKGS chromium-headless-shell"
fi
APT_OPTS="--no-install-recommends --no-upgrade -o APT::Get::Upgrade=false"
export DEBIAN_FRONTEND=noninteractive
apt_updated=""
apt_update() {
    [ -n "$apt_updated" ] || apt-get update -qq
    apt_updated=1
}

# The installed packages that installing "$@" would upgrade (empty: none).
upgrades_needed() {
    # shellcheck disable=SC2086
    apt-get install -s $APT_OPTS "$@" | awk '/^Inst [^ ]+ \[/ {print $2}' | tr '\n' ' '
}

install_missing() {
    local missing="" p ok="" up
    for p in $PKGS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
    done
    [ -n "$missing" ] || return 0
    if [ "$(id -u)" != 0 ]; then
        echo "test.sh: missing packages:$missing (not root: not installed; their tests skip)" >&2
        return 0
    fi
    apt_update
    for p in $missing; do
        if ! up=$(upgrades_needed "$p" 2>/dev/null); then
            echo "test.sh: $p: not available here; left out (its tests skip)" >&2
        elif [ -n "$up" ]; then
            echo "test.sh: $p would upgrade installed packages ($up); left out (its tests skip)" >&2
        else
            ok="$ok $p"
        fi
    done
    [ -n "$ok" ] || return 0
    echo "test.sh: installing:$ok" >&2
    # shellcheck disable=SC2086
    apt-get install -y -qq $APT_OPTS $ok
    # kexec-tools installs with LOAD_KEXEC=true (every reboot of this machine a kexec into
    # /vmlinuz); the tests only kexec inside QEMU guests, so a package installed here says false.
    case " $ok " in
    *" kexec-tools "*) sed -i 's/^LOAD_KEXEC=true/LOAD_KEXEC=false/' /etc/default/kexec ;;
    esac
}

# Debian's kernel source unpacked into CACHE/debian-source (where `abperf workload` kbuild's
# tree=debian looks), kept between runs.
fetch_kernel_source() {
    local cache="${ABPERF_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/abperf}"
    local dest="$cache/debian-source" pkg tmp
    if compgen -G "/usr/src/linux-source-*.tar.*" >/dev/null ||
        compgen -G "$dest/usr/src/linux-source-*.tar.*" >/dev/null; then
        return 0
    fi
    if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
        echo "test.sh: no apt-get/dpkg-deb: no kernel source for the kbuild test (it skips)" >&2
        return 0
    fi
    apt_update
    pkg=$(apt-cache depends linux-source 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-source-/ {print $2; exit}')
    if [ -z "$pkg" ]; then
        echo "test.sh: apt-cache knows no linux-source-X.Y package (the kbuild test skips)" >&2
        return 0
    fi
    echo "test.sh: downloading $pkg (not installed) and unpacking it into $dest" >&2
    tmp=$(mktemp -d)
    if (cd "$tmp" && apt-get download -q "$pkg" >/dev/null) &&
        mkdir -p "$cache" && dpkg-deb -x "$tmp"/*.deb "$tmp/root"; then
        rm -rf "$dest" && mv "$tmp/root" "$dest"
    else
        echo "test.sh: could not download or unpack $pkg (the kbuild test skips)" >&2
    fi
    rm -rf "$tmp"
}

install_missing
fetch_kernel_source

# The build without debug information and not incremental (a variable already set is kept): a
# clean clone's builds take minutes less and its target/ 1.3 GB instead of 11+ GB.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-0}"
export CARGO_PROFILE_TEST_DEBUG="${CARGO_PROFILE_TEST_DEBUG:-0}"

# Every locked package on disk (also other platforms' ones): tests/layering.rs reads the dependency
# trees with `cargo metadata --offline --locked`, which needs them all.
cargo fetch --locked
cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
# The house rules the compiler does not check: no file-level import cycle inside a crate, no
# production function over 120 lines (docs/architecture.md#rules).
python3 scripts/file_cycles.py
python3 scripts/long_functions.py
export ABPERF_TEST_SKIP_LOG="$PWD/target/test-skips.log"
mkdir -p target
: >"$ABPERF_TEST_SKIP_LOG"
status=0
# The test binaries are built once, then run by scripts/test_lanes.py: the ones that boot QEMU
# guests in a lane beside the others, the ones that assert on this machine's timing (micro's core
# probe, signals answered at once, a small effect found) alone at the end, with no guest beside
# them (docs/benchmarks.md#test-suite). ABPERF_TEST_ONE_LANE=1 runs them one after another.
export ABPERF_TEST_ONE_LANE="${ABPERF_TEST_ONE_LANE:-0}"
messages="$PWD/target/test-binaries.json"
if cargo test --locked --workspace --all-targets --no-run --message-format=json-render-diagnostics >"$messages"; then
    python3 scripts/test_lanes.py "$messages" || status=$?
else
    status=$?
fi
# The SQLite-only build (no PostgreSQL backend): the store's tests, and the binary refusing a
# postgres:// store with how to get the backend (tests/store_backends.rs).
cargo clippy --locked --no-default-features -p abperf-store -p abperf --lib -- -D warnings || status=$?
cargo test --locked --no-default-features -p abperf-store || status=$?
cargo test --locked --no-default-features --test store_backends || status=$?
skipped=$(sort -u "$ABPERF_TEST_SKIP_LOG" | wc -l)
echo
echo "test.sh: $skipped test(s) skipped (shown as ok above), each on a probe of this machine:"
sort -u "$ABPERF_TEST_SKIP_LOG" | sed 's/^/  /'
exit "$status"
