#!/bin/busybox sh
# PID 1 of the boot-loop test's "machine" (tests/boot_loop.rs): a QEMU guest whose virtio disk
# (/dev/vda, ext4) is its persistent state: the store, the kernels and their initramfs images,
# and /machine/boot.sh, which this init runs at every boot as a systemd unit would. The software
# (abperf, kexec and their libraries) comes from the host's root over 9p, read-only under a tmpfs
# overlay, as in abperf's own guest init (crates/vm/src/init.sh). Console lines start "machine:".
# A machine booted through firmware (the disk holds /esp) has its EFI system partition on the
# second disk (/dev/vdb1), mounted at /efi, and efivarfs; each boot says what the boot loader
# did (its selected entry, one-shot, default) and which entry files the ESP holds, and again
# what is set and there when the machine powers off.
/bin/busybox --install -s /bin
export PATH=/bin
say() { echo "machine: $*" >/dev/console; }
die() {
    say "error: $*"
    poweroff -f
    exit 1
}
mount -t proc proc /proc || die "cannot mount /proc"
mount -t sysfs sysfs /sys || die "cannot mount /sys"
mount -t devtmpfs devtmpfs /dev || die "cannot mount devtmpfs on /dev"
while read -r m; do
    [ -n "$m" ] || continue
    insmod "/abperf/mod/$m" || die "cannot load the module $m"
done </abperf/modules
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro abperfroot /lower || die "cannot mount the host's root"
mount -t tmpfs -o mode=0755 machine-rw /rw || die "cannot mount the overlay's tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
    die "cannot mount the overlay"
for d in proc sys dev; do
    mount --move "/$d" "/newroot/$d" || die "cannot move /$d"
done
mount -t tmpfs -o mode=0755 run /newroot/run
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 shm /newroot/dev/shm
# No tmpfs over /tmp: the overlay's upper (a tmpfs) already takes the guest's writes there, and a
# tmpfs would hide the host's /tmp, where the abperf of a clone under /tmp lives (tests/boot_loop.rs
# machine_runs_an_abperf_that_lives_under_the_hosts_tmp). abperf's own guest init does the same.
mount -t tracefs tracefs /newroot/sys/kernel/tracing 2>/dev/null
i=0
while [ ! -b /newroot/dev/vda ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
mkdir -p /newroot/machine
mount -t ext4 /newroot/dev/vda /newroot/machine || die "cannot mount the machine's disk /dev/vda"
say "up $(uname -r): $(cat /newroot/proc/cmdline)"
# An EFI variable of the Boot Loader Interface, its UTF-16 read as ASCII (none: "-").
loadervar() {
    f=/newroot/sys/firmware/efi/efivars/$1-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
    if [ -e "$f" ]; then tail -c +5 "$f" | tr -d '\000'; else echo -; fi
}
if [ -e /newroot/machine/esp ]; then
    mount -t efivarfs efivarfs /newroot/sys/firmware/efi/efivars || die "cannot mount efivarfs"
    i=0
    while [ ! -b /newroot/dev/vdb1 ] && [ $i -lt 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    mkdir -p /newroot/efi
    mount -t vfat /newroot/dev/vdb1 /newroot/efi || die "cannot mount the ESP /dev/vdb1"
    say "loader: selected $(loadervar LoaderEntrySelected); one-shot $(loadervar LoaderEntryOneShot); default $(loadervar LoaderEntryDefault); entries on the ESP: $(ls /newroot/efi/loader/entries | tr '\n' ' ')"
fi
# The user's config (where abperf records the designs the user approved, which the loop's
# resume at each boot checks) must outlive a boot: on this machine only its disk does.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root XDG_CONFIG_HOME=/machine/config \
    chroot /newroot /bin/sh /machine/boot.sh </dev/null >/dev/console 2>&1
say "boot.sh exited with $?"
if [ -e /newroot/machine/esp ]; then
    say "at power-off: one-shot $(loadervar LoaderEntryOneShot); default $(loadervar LoaderEntryDefault); entries on the ESP: $(ls /newroot/efi/loader/entries | tr '\n' ' ')"
fi
sync
umount /newroot/efi 2>/dev/null
umount /newroot/machine
poweroff -f
