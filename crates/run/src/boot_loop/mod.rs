//! The boot loop on the machine itself (`abperf run --kernel ... --boot-on-host kexec|reboot`):
//! the kernel-variant experiment's planned boots, in their seeded ABBA order, made by this
//! machine instead of QEMU. The plan is committed before the first boot; each boot loads the next
//! planned kernel and command line with `kexec -l` and starts it (`systemctl kexec`), or sets a
//! one-shot boot-loader entry for it and reboots ([`mode`], [`bli`]); at boot a systemd
//! unit runs `abperf boot-loop resume`, which checks `uname -r` and `/proc/cmdline` against the
//! plan, runs that boot's share of the schedule as a VM guest does, commits each run and moves
//! on. At the end the unit is removed and the machine reboots into its default kernel.
//!
//! - [`design`]: the loop as the store keeps it ([`design::LoopDesign`], [`design::Loop`]).
//! - [`step`]: the step taken at every boot ([`step::at_boot`] → [`step::Next`]).
//! - [`machine`]: this boot (release, command line, boot id), kexec, reboot.
//! - [`mode`]: kexec or reboot: arm the next boot, start it, leave nothing armed.
//! - [`bli`], [`efivar`]: reboot mode's one-shot entries (Boot Loader Interface, efivarfs).
//! - [`unit`]: the systemd unit.
//! - [`readiness`]: `abperf doctor`'s check that this machine can run a loop.
//!
//! Never strand a machine: kexec does not change the boot loader, and reboot mode uses one-shot
//! entries only, so a hang, a crash or a power cut brings the machine back to its default
//! kernel, where the unit settles the lost boot and boots it again (twice at most); a boot in a
//! kernel the plan does not have, or reaching abperf later than `--boot-timeout` after it was
//! started, ends the loop with the reason stored.

pub mod bli;
pub mod design;
pub mod efivar;
pub mod machine;
pub mod mode;
pub mod readiness;
pub mod step;
pub mod unit;
