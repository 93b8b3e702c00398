//! `xstate`: XSAVE, XSAVEOPT, XSAVEC and XRSTOR with the requested-feature mask = XCR0, the
//! register state clean (all init), SSE-dirty, AVX-dirty or AVX-512-dirty, and the save area hot
//! or flushed from the cache (clflush); and VZEROUPPER / VZEROALL. x86 only.
//!
//! Each sample runs in one asm block: XRSTOR from the area (this sets the register state and,
//! for XSAVEOPT, arms the modified optimisation), optional clflush of the areas, then the timed
//! loop. No compiler-generated code runs between setting the state and measuring it. Hot: 32
//! executions on one area. Flushed: one execution on each of 8 areas (XSAVEOPT's modified
//! optimisation then applies to the first only: the others were not the source of the XRSTOR).

use super::cpu::CpuInfo;
use super::{Options, Sink};
use anyhow::Result;

#[cfg(not(target_arch = "x86_64"))]
pub fn bench(sink: &mut Sink, _opts: &Options, _cpu: &CpuInfo) -> Result<()> {
    sink.skip("xstate", None, "x86 only (XSAVE family instructions)");
    Ok(())
}

#[cfg(target_arch = "x86_64")]
pub use imp::{AlignedArea, reset_upper_state};

#[cfg(target_arch = "x86_64")]
pub fn bench(sink: &mut Sink, opts: &Options, cpu: &CpuInfo) -> Result<()> {
    imp::bench(sink, opts, cpu)
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::super::harness::{Rounds, collect, median};
    use super::*;
    use core::arch::asm;
    use rand::{Rng, SeedableRng};

    /// A zero-filled, page-aligned buffer for XSAVE areas (64-byte alignment is required; page
    /// alignment makes the area's place in the page, which changes XSAVE's cost by ~15%, the
    /// same in every run).
    pub struct AlignedArea {
        buf: Vec<u8>,
        off: usize,
        pub len: usize,
    }

    impl AlignedArea {
        pub fn new(len: usize) -> AlignedArea {
            AlignedArea::new_at(len, 0)
        }
        /// A page-aligned area `pages` pages past the start of a fresh allocation (one that
        /// large is mapped afresh: new physical pages, and cache sets that vary with `pages`).
        pub fn new_at(len: usize, pages: usize) -> AlignedArea {
            let buf = vec![0u8; len + 4096 * (pages + 1)];
            let off = (4096 - buf.as_ptr() as usize % 4096) % 4096 + 4096 * pages;
            let mut a = AlignedArea { buf, off, len };
            // MXCSR default, so that restoring SSE state from a zero area is valid.
            a.bytes_mut()[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
            a
        }
        pub fn ptr(&mut self) -> *mut u8 {
            // SAFETY: off < 4096 and buf has len + 4096 bytes.
            unsafe { self.buf.as_mut_ptr().add(self.off) }
        }
        pub fn bytes(&self) -> &[u8] {
            &self.buf[self.off..self.off + self.len]
        }
        pub fn bytes_mut(&mut self) -> &mut [u8] {
            &mut self.buf[self.off..self.off + self.len]
        }
        /// XSTATE_BV of a saved area (which components were not in their init state).
        pub fn xstate_bv(&self) -> u64 {
            u64::from_le_bytes(self.bytes()[512..520].try_into().expect("8 bytes"))
        }
    }

    /// Put the AVX and AVX-512 register state (YMM upper halves, opmasks, ZMM upper halves,
    /// ZMM16-31) back into its init configuration. No-op without XSAVE.
    pub fn reset_upper_state(cpu: &CpuInfo) {
        if !(cpu.xsave && cpu.osxsave) {
            return;
        }
        let mask = cpu.xcr0 & 0xE4;
        if mask == 0 {
            return;
        }
        let mut init = AlignedArea::new(cpu.xsave_size.max(1024) as usize);
        // SAFETY: XRSTOR from a valid standard-format area (XSTATE_BV = 0 means "init these").
        unsafe {
            asm!("mov rax, r11", "mov rdx, r11", "shr rdx, 32", "xrstor64 [rdi]",
                 in("rdi") init.ptr(), in("r11") mask, clobber_abi("C"), options(nostack));
        }
    }

    macro_rules! timed_op {
        ($name:ident, $insn:literal) => {
            /// XRSTOR from `area` (sets the state), clflush `lines` lines from `area` on, then
            /// time `k` executions of the instruction, the i-th on `area + i * stride`.
            /// Returns (t0, t1).
            #[inline(never)]
            unsafe fn $name(area: *mut u8, mask: u64, lines: usize, k: usize, stride: usize) -> (u64, u64) {
                let t0: u64;
                let t1: u64;
                // SAFETY: area is a valid 64-byte aligned XSAVE area of the right size.
                unsafe {
                    asm!(
                        "mov rax, r11", "mov rdx, r11", "shr rdx, 32",
                        "xrstor64 [rdi]",
                        "test r8, r8", "jz 3f",
                        "mov rcx, rdi",
                        "2:", "clflush [rcx]", "add rcx, 64", "dec r8", "jnz 2b",
                        "mfence",
                        "3:",
                        "lfence", "rdtsc", "lfence", "shl rdx, 32", "or rax, rdx", "mov r10, rax",
                        "mov rax, r11", "mov rdx, r11", "shr rdx, 32",
                        "4:", $insn, "add rdi, rsi", "dec r9", "jnz 4b",
                        "rdtscp", "lfence", "shl rdx, 32", "or rax, rdx",
                        inout("rdi") area => _, in("rsi") stride, in("r11") mask, inout("r8") lines => _,
                        inout("r9") k => _,
                        out("r10") t0, out("rax") t1, out("rdx") _, out("rcx") _,
                        clobber_abi("C"), options(nostack),
                    );
                }
                (t0, t1)
            }
        };
    }
    timed_op!(op_xsave, "xsave64 [rdi]");
    timed_op!(op_xsaveopt, "xsaveopt64 [rdi]");
    timed_op!(op_xsavec, "xsavec64 [rdi]");
    timed_op!(op_xrstor, "xrstor64 [rdi]");

    macro_rules! timed_loop {
        ($name:ident, $($insn:literal),*) => {
            /// Time `k` iterations of a loop of 8 instructions (or an empty loop).
            #[inline(never)]
            unsafe fn $name(k: usize) -> (u64, u64) {
                let t0: u64;
                let t1: u64;
                // SAFETY: register-only instructions, clobbers declared.
                unsafe {
                    asm!(
                        "lfence", "rdtsc", "lfence", "shl rdx, 32", "or rax, rdx", "mov r10, rax",
                        "2:", $($insn,)* "dec r9", "jnz 2b",
                        "rdtscp", "lfence", "shl rdx, 32", "or rax, rdx",
                        inout("r9") k => _, out("r10") t0, out("rax") t1, out("rdx") _, out("rcx") _,
                        clobber_abi("C"), options(nostack, nomem),
                    );
                }
                (t0, t1)
            }
        };
    }
    timed_loop!(loop_empty,);
    timed_loop!(
        loop_vzeroupper,
        "vzeroupper",
        "vzeroupper",
        "vzeroupper",
        "vzeroupper",
        "vzeroupper",
        "vzeroupper",
        "vzeroupper",
        "vzeroupper"
    );
    timed_loop!(
        loop_vzeroall,
        "vzeroall",
        "vzeroall",
        "vzeroall",
        "vzeroall",
        "vzeroall",
        "vzeroall",
        "vzeroall",
        "vzeroall"
    );

    /// Save the state produced by `dirty` (after restoring all-init from `clean`) into `out`.
    macro_rules! prep {
        ($name:ident, $feat:literal, $($insn:literal),*) => {
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn $name(clean: *mut u8, out: *mut u8, mask: u64) {
                // SAFETY: valid areas; every register the instructions write is clobbered.
                unsafe {
                    asm!(
                        "mov rax, r11", "mov rdx, r11", "shr rdx, 32",
                        "xrstor64 [rdi]",
                        $($insn,)*
                        "mov rax, r11", "mov rdx, r11", "shr rdx, 32",
                        "xsave64 [rsi]",
                        in("rdi") clean, in("rsi") out, in("r11") mask, clobber_abi("C"), options(nostack),
                    );
                }
            }
        };
    }
    prep!(
        prep_sse,
        "sse2",
        "pcmpeqd xmm0, xmm0",
        "pcmpeqd xmm1, xmm1",
        "pcmpeqd xmm2, xmm2",
        "pcmpeqd xmm3, xmm3",
        "pcmpeqd xmm4, xmm4",
        "pcmpeqd xmm5, xmm5",
        "pcmpeqd xmm6, xmm6",
        "pcmpeqd xmm7, xmm7",
        "pcmpeqd xmm8, xmm8",
        "pcmpeqd xmm9, xmm9",
        "pcmpeqd xmm10, xmm10",
        "pcmpeqd xmm11, xmm11",
        "pcmpeqd xmm12, xmm12",
        "pcmpeqd xmm13, xmm13",
        "pcmpeqd xmm14, xmm14",
        "pcmpeqd xmm15, xmm15"
    );
    prep!(
        prep_avx,
        "avx2",
        "vpcmpeqd ymm0, ymm0, ymm0",
        "vpcmpeqd ymm1, ymm1, ymm1",
        "vpcmpeqd ymm2, ymm2, ymm2",
        "vpcmpeqd ymm3, ymm3, ymm3",
        "vpcmpeqd ymm4, ymm4, ymm4",
        "vpcmpeqd ymm5, ymm5, ymm5",
        "vpcmpeqd ymm6, ymm6, ymm6",
        "vpcmpeqd ymm7, ymm7, ymm7",
        "vpcmpeqd ymm8, ymm8, ymm8",
        "vpcmpeqd ymm9, ymm9, ymm9",
        "vpcmpeqd ymm10, ymm10, ymm10",
        "vpcmpeqd ymm11, ymm11, ymm11",
        "vpcmpeqd ymm12, ymm12, ymm12",
        "vpcmpeqd ymm13, ymm13, ymm13",
        "vpcmpeqd ymm14, ymm14, ymm14",
        "vpcmpeqd ymm15, ymm15, ymm15"
    );
    prep!(
        prep_avx512,
        "avx512f",
        "vpternlogd zmm0, zmm0, zmm0, 0xff",
        "vpternlogd zmm1, zmm1, zmm1, 0xff",
        "vpternlogd zmm2, zmm2, zmm2, 0xff",
        "vpternlogd zmm3, zmm3, zmm3, 0xff",
        "vpternlogd zmm4, zmm4, zmm4, 0xff",
        "vpternlogd zmm5, zmm5, zmm5, 0xff",
        "vpternlogd zmm6, zmm6, zmm6, 0xff",
        "vpternlogd zmm7, zmm7, zmm7, 0xff",
        "vpternlogd zmm8, zmm8, zmm8, 0xff",
        "vpternlogd zmm9, zmm9, zmm9, 0xff",
        "vpternlogd zmm10, zmm10, zmm10, 0xff",
        "vpternlogd zmm11, zmm11, zmm11, 0xff",
        "vpternlogd zmm12, zmm12, zmm12, 0xff",
        "vpternlogd zmm13, zmm13, zmm13, 0xff",
        "vpternlogd zmm14, zmm14, zmm14, 0xff",
        "vpternlogd zmm15, zmm15, zmm15, 0xff",
        "vpternlogd zmm16, zmm16, zmm16, 0xff",
        "vpternlogd zmm17, zmm17, zmm17, 0xff",
        "vpternlogd zmm18, zmm18, zmm18, 0xff",
        "vpternlogd zmm19, zmm19, zmm19, 0xff",
        "vpternlogd zmm20, zmm20, zmm20, 0xff",
        "vpternlogd zmm21, zmm21, zmm21, 0xff",
        "vpternlogd zmm22, zmm22, zmm22, 0xff",
        "vpternlogd zmm23, zmm23, zmm23, 0xff",
        "vpternlogd zmm24, zmm24, zmm24, 0xff",
        "vpternlogd zmm25, zmm25, zmm25, 0xff",
        "vpternlogd zmm26, zmm26, zmm26, 0xff",
        "vpternlogd zmm27, zmm27, zmm27, 0xff",
        "vpternlogd zmm28, zmm28, zmm28, 0xff",
        "vpternlogd zmm29, zmm29, zmm29, 0xff",
        "vpternlogd zmm30, zmm30, zmm30, 0xff",
        "vpternlogd zmm31, zmm31, zmm31, 0xff",
        "kxnorw k1, k0, k0",
        "kxnorw k2, k0, k0",
        "kxnorw k3, k0, k0",
        "kxnorw k4, k0, k0",
        "kxnorw k5, k0, k0",
        "kxnorw k6, k0, k0",
        "kxnorw k7, k0, k0"
    );

    type OpFn = unsafe fn(*mut u8, u64, usize, usize, usize) -> (u64, u64);
    type Loop = unsafe fn(usize) -> (u64, u64);

    /// Hot: K ops on one area.
    const K: usize = 32;
    /// Cold: one op on each of AREAS freshly clflushed areas (the counter's 26-cycle step then
    /// costs ~3 cycles per op instead of 26).
    const AREAS: usize = 8;
    /// VZEROUPPER / VZEROALL: loops of 8 x ITERS minus the empty loop, in the same rounds.
    const ITERS: usize = 64;
    const VZERO: [(&str, Loop); 3] = [
        ("empty", loop_empty),
        ("vzeroupper", loop_vzeroupper),
        ("vzeroall", loop_vzeroall),
    ];

    /// What is measured: the requested-feature mask and the save area's size, the register
    /// state templates, the instructions, and every (instruction, state, clflushed)
    /// configuration (indices into `ops` and `states`).
    struct Plan {
        mask: u64,
        size: usize,
        states: Vec<(&'static str, AlignedArea)>,
        ops: Vec<(&'static str, OpFn)>,
        configs: Vec<(usize, usize, bool)>,
    }

    impl Plan {
        /// The plan for this CPU; what it lacks is skipped in `sink` with the reason.
        fn new(sink: &mut Sink, cpu: &CpuInfo) -> Plan {
            let mask = cpu.xcr0;
            let size = (cpu.xsave_size.max(cpu.xsavec_size) as usize)
                .max(576)
                .div_ceil(64)
                * 64;
            let states = templates(sink, cpu, mask, size);
            let mut ops: Vec<(&str, OpFn)> = vec![("xsave", op_xsave), ("xrstor", op_xrstor)];
            if cpu.xsaveopt {
                ops.insert(1, ("xsaveopt", op_xsaveopt));
            } else {
                sink.skip("xstate", Some("xsaveopt".into()), "CPU has no XSAVEOPT");
            }
            if cpu.xsavec {
                ops.insert(ops.len() - 1, ("xsavec", op_xsavec));
            } else {
                sink.skip("xstate", Some("xsavec".into()), "CPU has no XSAVEC");
            }
            let configs: Vec<(usize, usize, bool)> = (0..ops.len())
                .flat_map(|o| (0..states.len()).flat_map(move |st| [(o, st, false), (o, st, true)]))
                .collect();
            Plan {
                mask,
                size,
                states,
                ops,
                configs,
            }
        }
    }

    /// State templates: clean, and SSE-, AVX- and AVX-512-dirty where the CPU and OS have them.
    fn templates(
        sink: &mut Sink,
        cpu: &CpuInfo,
        mask: u64,
        size: usize,
    ) -> Vec<(&'static str, AlignedArea)> {
        let mut clean = AlignedArea::new(size);
        let mut states: Vec<(&str, AlignedArea)> = Vec::new();
        let mut c2 = AlignedArea::new(size);
        c2.bytes_mut().copy_from_slice(clean.bytes());
        states.push(("clean", c2));
        let mut add = |name: &'static str,
                       f: unsafe fn(*mut u8, *mut u8, u64),
                       ok: Option<String>,
                       sink: &mut Sink| {
            if let Some(why) = ok {
                sink.skip("xstate", Some(format!("{name}-dirty")), why);
                return;
            }
            let mut a = AlignedArea::new(size);
            // SAFETY: feature availability checked by the caller's `ok`.
            unsafe { f(clean.ptr(), a.ptr(), mask) };
            states.push((name, a));
        };
        add("sse", prep_sse, None, sink);
        add(
            "avx",
            prep_avx,
            (!cpu.avx_usable() || !cpu.avx2).then(|| "CPU or OS lacks AVX2 state".to_string()),
            sink,
        );
        add("avx512", prep_avx512, cpu.avx512_missing(), sink);
        states
    }

    /// The samples of every configuration, and of the VZERO loops when `avx`, with the rounds
    /// they were spread over.
    type Samples = (Vec<Vec<f64>>, [Vec<f64>; 3], Rounds);

    /// Samples are taken in rounds over all configurations, spread over the span (see
    /// harness::Rounds), so that each median spans the whole benchmark and the host's phases hit
    /// every configuration alike.
    fn measure(sink: &mut Sink, opts: &Options, plan: &Plan, avx: bool) -> Result<Samples> {
        let (mask, size, lines) = (plan.mask, plan.size, plan.size / 64);
        let (ops, states, configs) = (&plan.ops, &plan.states, &plan.configs);
        let samples = opts.samples(301, 1001);
        let oh = sink.timer.overhead;
        let mut rounds = opts.rounds(samples);
        let mut got: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
        let vzero = VZERO;
        let mut vz: [Vec<f64>; 3] = Default::default();
        // Save areas on fresh memory at a random place every round: the cost of a clflushed
        // area moved by 20% between runs that each kept one allocation.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0),
        );
        for round in 0..rounds.count() {
            sink.round(&mut rounds, round)?;
            let per = rounds.per(round);
            let mut work = AlignedArea::new_at(size * AREAS, rng.random_range(32..544));
            for (ci, &(o, st, cold)) in configs.iter().enumerate() {
                let f = ops[o].1;
                let tmpl = &states[st].1;
                let (k, stride) = if cold { (AREAS, size) } else { (K, 0) };
                let s = collect(if round == 0 { 20 } else { 3 }, per, || {
                    for a in 0..k.min(AREAS) {
                        work.bytes_mut()[a * size..(a + 1) * size].copy_from_slice(tmpl.bytes());
                    }
                    // SAFETY: work holds valid standard-format areas for XCR0.
                    let (t0, t1) = unsafe {
                        f(
                            work.ptr(),
                            mask,
                            if cold { lines * AREAS } else { 0 },
                            k,
                            stride,
                        )
                    };
                    (t1.wrapping_sub(t0) as f64 - oh) / k as f64
                });
                got[ci].extend(s);
            }
            if avx {
                for (i, &(_, f)) in vzero.iter().enumerate() {
                    vz[i].extend(collect(if round == 0 { 20 } else { 3 }, per, || {
                        // SAFETY: register-only loops; AVX checked above.
                        let (t0, t1) = unsafe { f(ITERS) };
                        t1.wrapping_sub(t0) as f64 - oh
                    }));
                }
            }
        }
        Ok((got, vz, rounds))
    }

    pub fn bench(sink: &mut Sink, opts: &Options, cpu: &CpuInfo) -> Result<()> {
        if !(cpu.xsave && cpu.osxsave) {
            sink.skip(
                "xstate",
                None,
                "CPU or OS does not enable XSAVE (CPUID.1:ECX.XSAVE/OSXSAVE)",
            );
            return Ok(());
        }
        let plan = Plan::new(sink, cpu);
        let avx = cpu.avx_usable();
        let samples = measure(sink, opts, &plan, avx)?;
        add_samples(sink, &plan, avx, samples);
        reset_upper_state(cpu);
        findings(sink);
        Ok(())
    }

    /// Every configuration's samples (and the VZERO loops', net of the empty loop) to the sink.
    fn add_samples(sink: &mut Sink, plan: &Plan, avx: bool, (mut got, vz, rounds): Samples) {
        let (mask, size) = (plan.mask, plan.size);
        let (ops, states) = (&plan.ops, &plan.states);
        for (ci, &(o, st, cold)) in plan.configs.iter().enumerate() {
            let (op, state, tmpl) = (ops[o].0, states[st].0, &states[st].1);
            let cache = if cold { "clflushed" } else { "hot" };
            sink.add(
                "xstate",
                format!("xstate/{op}/{state}/{cache}"),
                &[
                    ("op", op.to_string()),
                    ("state", state.to_string()),
                    ("area", cache.to_string()),
                    ("rfbm", format!("0x{mask:x}")),
                    ("xstate_bv", format!("0x{:x}", tmpl.xstate_bv())),
                    ("area_bytes", size.to_string()),
                    ("ops_per_sample", if cold { AREAS } else { K }.to_string()),
                    ("areas", if cold { AREAS } else { 1 }.to_string()),
                ],
                "instruction",
                1,
                std::mem::take(&mut got[ci]),
                &rounds,
            );
        }
        if avx {
            let base = median(&vz[0]);
            for (i, &(name, _)) in VZERO.iter().enumerate().skip(1) {
                let s = vz[i]
                    .iter()
                    .map(|c| (c - base) / (8 * ITERS) as f64)
                    .collect();
                sink.add(
                    "xstate",
                    format!("xstate/{name}"),
                    &[
                        ("op", name.to_string()),
                        ("instructions_per_sample", (8 * ITERS).to_string()),
                    ],
                    "instruction",
                    1,
                    s,
                    &rounds,
                );
            }
        } else {
            sink.skip("xstate", Some("vzeroupper".into()), "CPU or OS lacks AVX");
        }
    }

    /// Findings: the price of dirty AVX-512 state and of a cold save area.
    fn findings(sink: &mut Sink) {
        let m = |s: &Sink, n: &str| s.median(n);
        if let (Some(c), Some(d)) = (
            m(sink, "xstate/xsave/clean/hot"),
            m(sink, "xstate/xsave/avx512/hot"),
        ) {
            sink.finding(
                "xstate",
                "xsave-avx512-extra",
                Some(d - c),
                "cycles",
                format!(
                    "XSAVE with AVX-512 state dirty costs {d:.0} cycles vs {c:.0} clean ({:+.0})",
                    d - c
                ),
            );
        }
        if let (Some(h), Some(c)) = (
            m(sink, "xstate/xrstor/avx/hot"),
            m(sink, "xstate/xrstor/avx/clflushed"),
        ) {
            sink.finding(
                "xstate",
                "xrstor-cold-extra",
                Some(c - h),
                "cycles",
                format!("XRSTOR of AVX state from a clflushed area: {c:.0} cycles vs {h:.0} hot"),
            );
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn templates_have_expected_xstate_bv() {
        let cpu = CpuInfo::detect();
        if !(cpu.xsave && cpu.osxsave) {
            abperf_model::error::stderr_line("no XSAVE here: skipped");
            return;
        }
        let size = cpu.xsave_size as usize;
        let mut clean = AlignedArea::new(size);
        let mut sse = AlignedArea::new(size);
        // SAFETY: XSAVE checked.
        unsafe { imp::prep_sse(clean.ptr(), sse.ptr(), cpu.xcr0) };
        assert_eq!(
            sse.xstate_bv() & 2,
            2,
            "SSE component in use: {:x}",
            sse.xstate_bv()
        );
        if cpu.avx512_usable() {
            let mut z = AlignedArea::new(size);
            // SAFETY: AVX-512 checked.
            unsafe { imp::prep_avx512(clean.ptr(), z.ptr(), cpu.xcr0) };
            assert_eq!(
                z.xstate_bv() & 0xE0,
                0xE0,
                "AVX-512 components in use: {:x}",
                z.xstate_bv()
            );
        }
        reset_upper_state(&cpu);
    }
}
