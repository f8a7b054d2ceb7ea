//! Writing your own inline PTX, and the small helpers built that way.
//!
//! When this library lacks an instruction, write it with `core::arch::asm!` in the kernel
//! crate (the build enables `asm_experimental_arch` for device crates). Guard it with
//! `#[cfg(target_arch = "nvptx64")]` so the crate still compiles for the host:
//!
//! ```ignore
//! /// `%lanemask_lt`: bits of the lanes below this one.
//! #[inline(always)]
//! pub fn lane_mask_lt() -> u32 {
//!     #[cfg(target_arch = "nvptx64")]
//!     {
//!         let m: u32;
//!         // SAFETY: reads a special register; no memory access.
//!         unsafe { core::arch::asm!("mov.u32 {m}, %lanemask_lt;", m = out(reg32) m, options(pure, nomem, nostack)) };
//!         m
//!     }
//!     #[cfg(not(target_arch = "nvptx64"))]
//!     unimplemented!("GPU only")
//! }
//! ```
//!
//! # Register classes
//! - `reg16`: `i8`/`u8`/`i16`/`u16` (a PTX `.b16` register, `%rs<n>`),
//! - `reg32`: 32-bit integers and `f32` (`%r<n>`, `%f<n>`),
//! - `reg64`: 64-bit integers, `f64`, pointers/`usize` (`%rd<n>`, `%fd<n>`).
//!
//! There is no predicate class: turn a `bool` into a predicate inside the asm with
//! `setp.ne.u32`, and back with `selp.u32`, in a `{ }` scope that declares the predicate
//! registers (braces are written `{{ }}` in the template):
//!
//! ```ignore
//! core::arch::asm!(
//!     "{{ .reg .pred %p; setp.ne.u32 %p, {x}, 0; vote.sync.any.pred %p, %p, {m}; selp.u32 {r}, 1, 0, %p; }}",
//!     x = in(reg32) flag as u32, m = in(reg32) mask, r = out(reg32) any, options(nomem, nostack),
//! );
//! ```
//!
//! Floats may be passed directly, but PTX only accepts a register of a *different* type than the
//! instruction (e.g. an `.f32` register for `.u32`) when one of them is a `.b` type, so passing
//! `x.to_bits()` for bit-level instructions is the portable habit. Write immediates in the
//! template, or pass them with `const` operands.
//!
//! # Options
//! - `pure, nomem`: no memory access, result depends only on inputs: the compiler may merge,
//!   hoist or drop the asm (arithmetic, special registers that do not change, address
//!   computations).
//! - `pure, readonly`: reads memory only; still ordered after stores and barriers.
//! - no `nomem`/`readonly`: treated as reading and writing any memory; use for stores, atomics,
//!   barriers and fences, so the compiler keeps other memory accesses on their side.
//! - omit `pure` for anything whose result changes between calls (clocks, `activemask`).
//! - `nostack`: always fine on the GPU (PTX has no stack to preserve).
//!
//! Convergence: rustc does not mark inline asm `convergent` (clang does for CUDA), so LLVM may
//! duplicate a barrier or warp instruction into several branches (it never moves one into or
//! out of a condition: the asm has side effects). On sm_70+ that is harmless for the
//! non-`.aligned` barriers (`barrier.sync`, which [`crate::sync`] uses, not `bar.sync`) and the
//! `.sync` warp instructions, which synchronize threads arriving at different instructions.
//! This library therefore targets sm_70+ only, and keeps every warp/barrier asm non-`pure`. In
//! your own asm, prefer the non-`.aligned` forms for the same reason.
//!
//! Shared memory: use `SharedArray::addr()` (a 32-bit shared-window address) with
//! `ld.shared`/`st.shared`/`atom.shared`, not a generic pointer (see [`crate::shared`]).
//! Avoid labels in inline asm: a function inlined twice would define them twice.
#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

/// One accessor per lane-mask special register.
macro_rules! lane_mask {
    ($($(#[$doc:meta])* $name:ident => $reg:literal, $cmp:ident, $eq:literal;)*) => { $(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            device!(concat!("asm::", stringify!($name)), {
                let m: u32;
                // SAFETY: reads a special register; no memory access.
                unsafe {
                    core::arch::asm!(concat!("mov.u32 {m}, ", $reg, ";"), m = out(reg32) m, options(pure, nomem, nostack))
                };
                m
            }, sim: { crate::sim::intrinsics::lane_mask(core::cmp::Ordering::$cmp, $eq) })
        }
    )* };
}

lane_mask! {
    /// Bits of the lanes below this one (`%lanemask_lt`): `popc(ballot & lane_mask_lt())` is
    /// this lane's rank among the lanes whose predicate is set (stream compaction).
    lane_mask_lt => "%lanemask_lt", Less, false;
    /// Bits of this lane and the ones below (`%lanemask_le`).
    lane_mask_le => "%lanemask_le", Less, true;
    /// This lane's bit (`%lanemask_eq`).
    lane_mask_eq => "%lanemask_eq", Equal, false;
    /// Bits of this lane and the ones above (`%lanemask_ge`).
    lane_mask_ge => "%lanemask_ge", Greater, true;
    /// Bits of the lanes above this one (`%lanemask_gt`).
    lane_mask_gt => "%lanemask_gt", Greater, false;
}

/// The SM this thread runs on (`%smid`), for diagnostics: it may change over a thread's life
/// only with preemption, and is not a dense index.
#[inline(always)]
pub fn sm_id() -> u32 {
    device!("asm::sm_id", {
        let id: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {i}, %smid;", i = out(reg32) id, options(nomem, nostack))
        };
        id
    }, sim: { 0 })
}
