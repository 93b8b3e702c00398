#!/bin/busybox sh
# abperf guest init: PID 1 of the initramfs abperf builds for each boot (crates/vm/src/initramfs.rs).
# Loads the modules listed in /abperf/modules, mounts the host's root read-only over 9p under a
# tmpfs overlay at /newroot, runs /abperf/cmd.sh chrooted there, reports on the virtio port
# abperf.control (release, cmdline, start, exit; or error) and powers off. Console messages
# start with "abperf-vm:".
/bin/busybox --install -s /bin
export PATH=/bin
. /abperf/config

CTL_OPEN=
say() { echo "abperf-vm: $*" >/dev/console; }
ctl() { if [ -n "$CTL_OPEN" ]; then echo "$*" >&3; fi; }
die() {
    say "error: $*"
    ctl "error $*"
    # Wait (briefly) for the host to have read the error before the machine goes away.
    if [ -n "$CTL_OPEN" ]; then read -r -t 10 ack <&3; fi
    poweroff -f
    exit 1
}

# The virtio port named $1 as /dev/vportNpM; its name arrives from the host asynchronously.
port() {
    i=0
    while [ $i -lt 300 ]; do
        for p in /sys/class/virtio-ports/*; do
            n=${p##*/}
            if [ "$(cat "$p/name" 2>/dev/null)" = "$1" ] && [ -e "/dev/$n" ]; then
                echo "/dev/$n"
                return 0
            fi
        done
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

mount -t proc proc /proc || die "cannot mount /proc"
mount -t sysfs sysfs /sys || die "cannot mount /sys"
mount -t devtmpfs devtmpfs /dev || die "cannot mount devtmpfs on /dev"
while read -r m; do
    [ -n "$m" ] || continue
    insmod "/abperf/mod/$m" || die "cannot load the module $m"
done </abperf/modules

c=$(port abperf.control) || die "no virtio port abperf.control (virtio_console missing?)"
exec 3<>"$c"
CTL_OPEN=1
r=$(port abperf.results) || die "no virtio port abperf.results"
mkdir -p /dev/virtio-ports
ln -s "../${c#/dev/}" /dev/virtio-ports/abperf.control
ln -s "../${r#/dev/}" /dev/virtio-ports/abperf.results
ctl "release $(uname -r)"
ctl "cmdline $(cat /proc/cmdline)"

mkdir -p /lower /rw /newroot
mount -t 9p -o "$ROOT_OPTS" "$ROOT_TAG" /lower ||
    die "cannot mount the host's root (9p tag $ROOT_TAG, options $ROOT_OPTS)"
mount -t tmpfs -o mode=0755 abperf-rw /rw || die "cannot mount the tmpfs for the overlay"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
    die "cannot mount the overlay on the host's root"
for d in proc sys dev; do
    mount --move "/$d" "/newroot/$d" || die "cannot move /$d into the new root"
done
mount -t tmpfs -o mode=0755 run /newroot/run || die "cannot mount /run"
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 shm /newroot/dev/shm
mount -t debugfs debugfs /newroot/sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /newroot/sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup 2>/dev/null
if [ -n "$MODS_TAG" ]; then
    md="/newroot/lib/modules/$(uname -r)"
    mkdir -p "$md" && mount -t 9p -o "$MODS_OPTS" "$MODS_TAG" "$md" ||
        die "cannot mount the kernel's modules (9p tag $MODS_TAG)"
fi
mkdir -p /newroot/run/abperf
cp /abperf/cmd.sh /newroot/run/abperf/cmd.sh || die "cannot copy the command into the new root"
cp -a /abperf/input /newroot/run/abperf/input || die "cannot copy the input files into the new root"

ctl "start $(cut -d' ' -f1 /newroot/proc/uptime)"
chroot /newroot /bin/sh /run/abperf/cmd.sh </dev/null 3>&-
rc=$?
ctl "exit $rc $(cut -d' ' -f1 /newroot/proc/uptime)"
# The host answers once it has the exit line; then nothing is left in flight.
read -r -t 10 ack <&3
poweroff -f
exit 1
