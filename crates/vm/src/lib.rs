//! Kernels as variants: boot a kernel image (with its own command line) in a QEMU virtual
//! machine that sees the host's root filesystem read-only under a private tmpfs overlay, run a
//! command there, and stream the lines it writes back to the host as they are produced.
//!
//! - [`kernel`]: Debian kernel packages fetched into a cache (`apt-get download`, `dpkg-deb -x`,
//!   `depmod -b`), bzImage release strings, modules directories and load order.
//! - [`engine`]: [`Vm::start`] a [`VmSpec`], then [`Event`]s: `Booted` (accelerator, guest
//!   release and /proc/cmdline, boot seconds), `Line` per result line, `Finished` ([`Outcome`]).
//! - [`guard`]: every QEMU in its own process group, killed on drop, on SIGINT/SIGTERM/SIGHUP
//!   and (parent-death signal) when abperf dies.
//! - [`probe`]: [`kvm_usable`], the doctor-style KVM check (ioctls, then a short boot).
//! - [`guest`]: the guest side: input files, and [`guest::Results`] to send lines to the host.
//!
//! Why QEMU directly and not virtme-ng: no Python at run time, a result channel of our own
//! (virtio-serial ports with an acknowledged exit), QEMU's pid and process group in our hands,
//! and a boot about twice as fast under TCG (docs/benchmarks.md#kernels-in-vms).

pub mod cpio;
pub mod engine;
pub mod guard;
pub mod guest;
pub mod initramfs;
pub mod kernel;
pub mod probe;

pub use abperf_model::vm::{KernelImage, KvmProbe, Verdict};
pub use engine::{Accel, BootInfo, Event, Exit, INPUT_DIR, Outcome, RESULTS_PORT, Vm, VmSpec};
pub use kernel::{cache_dir, fetch_kernel};
pub use probe::{kvm_usable, kvm_usable_cached};
