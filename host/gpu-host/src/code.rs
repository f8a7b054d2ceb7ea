//! The GPU code a kernel crate embeds, and which of it a device loads.
//!
//! The builder splits each kernel crate's PTX module into **code units** (normally one kernel
//! each, see `gpu_builder::units`) and, when ptxas was available at build time, assembles each
//! unit into SASS (a cubin) for a list of architectures. A unit carries its PTX and its cubins;
//! the host loads a unit when one of its kernels is first used:
//! - the cubin whose architecture is exactly the device's compute capability (`sm_90` or
//!   `sm_90a` on a 9.0 device) is loaded as is: no JIT compilation;
//! - otherwise the PTX is loaded and the driver JIT-compiles it for the device (its disk cache
//!   makes later runs fast, but a fresh machine or container pays the compile once);
//! - `GPU_FORCE_PTX=1` in the environment always takes the PTX route (to test or debug the JIT
//!   path).
//!
//! Why per-architecture cubins picked here rather than one fatbin handed to the driver: the
//! choice is visible ([`KernelCode`] says which code a kernel runs), testable without a GPU, and
//! needs only ptxas at build time (no `fatbinary` tool). A cubin runs only on its exact compute
//! capability here (the driver would also run an sm_80 cubin on sm_86, but code assembled for
//! the device itself is what it should get; the PTX path gives that).

/// A loadable piece of a kernel crate's code: the kernels it defines, its PTX, and the cubins
/// assembled from that PTX. Generated launchers embed one per unit (`UNITS`).
#[derive(Debug, Clone, Copy)]
pub struct CodeUnit {
    /// The kernels (PTX entry points) the unit defines.
    pub kernels: &'static [&'static str],
    /// A complete PTX module.
    pub ptx: &'static str,
    /// SASS for the architectures it was assembled for.
    pub sass: &'static [Sass],
}

/// One cubin: SASS for one architecture.
#[derive(Debug, Clone, Copy)]
pub struct Sass {
    /// `sm_80`, `sm_90a`, ...
    pub arch: &'static str,
    /// The cubin (ELF) bytes, as ptxas wrote them.
    pub cubin: &'static [u8],
}

/// Environment variable that makes every load take the PTX (JIT) route: `GPU_FORCE_PTX=1`.
pub const FORCE_PTX_ENV: &str = "GPU_FORCE_PTX";

/// Which code a loaded kernel runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelCode {
    /// SASS assembled at build time for this architecture (`sm_90`, `sm_90a`, ...): nothing was
    /// compiled at load.
    Sass { arch: String },
    /// PTX, JIT-compiled by the driver for the device at load.
    Ptx,
    /// The kernel's Rust code on the CPU simulator.
    Simulator,
}

impl std::fmt::Display for KernelCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelCode::Sass { arch } => write!(f, "SASS for {arch}"),
            KernelCode::Ptx => f.write_str("PTX (JIT-compiled at load)"),
            KernelCode::Simulator => f.write_str("the CPU simulator"),
        }
    }
}

/// Whether `GPU_FORCE_PTX` asks for the PTX route (set, and not `0`, `false` or empty).
pub fn force_ptx_from_env() -> bool {
    force_ptx(std::env::var(FORCE_PTX_ENV).ok().as_deref())
}

/// [`force_ptx_from_env`] for a given value of the variable.
fn force_ptx(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        let v = v.trim();
        !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false"))
    })
}

/// The cubin of `sass` built for exactly compute capability `cc` (`sm_XY` or `sm_XYa`), unless
/// `force_ptx`; `None` means: load the PTX.
pub fn select_sass(sass: &[Sass], cc: (u32, u32), force_ptx: bool) -> Option<&Sass> {
    if force_ptx {
        return None;
    }
    let exact = format!("sm_{}{}", cc.0, cc.1);
    sass.iter().find(|s| s.arch == exact).or_else(|| {
        sass.iter()
            .find(|s| s.arch.strip_suffix('a') == Some(&exact))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUBIN: &[u8] = b"\x7fELF";

    fn sass(arch: &'static str) -> Sass {
        Sass { arch, cubin: CUBIN }
    }

    #[test]
    fn picks_the_exact_architecture_or_the_ptx() {
        let all = [sass("sm_80"), sass("sm_86"), sass("sm_89"), sass("sm_90")];
        assert_eq!(select_sass(&all, (9, 0), false).unwrap().arch, "sm_90");
        assert_eq!(select_sass(&all, (8, 6), false).unwrap().arch, "sm_86");
        assert_eq!(select_sass(&all, (8, 0), false).unwrap().arch, "sm_80");
        // No SASS for the device: PTX, even where an older cubin would be binary compatible.
        assert!(select_sass(&all, (8, 7), false).is_none());
        assert!(select_sass(&all, (10, 0), false).is_none());
        assert!(select_sass(&all, (12, 0), false).is_none());
        assert!(select_sass(&[], (9, 0), false).is_none());
        // Forced PTX.
        assert!(select_sass(&all, (9, 0), true).is_none());
    }

    #[test]
    fn architecture_specific_cubins_serve_their_exact_device() {
        let hopper = [sass("sm_90a")];
        assert_eq!(select_sass(&hopper, (9, 0), false).unwrap().arch, "sm_90a");
        assert!(select_sass(&hopper, (10, 0), false).is_none());
        // A plain sm_90 cubin is preferred when both exist.
        let both = [sass("sm_90a"), sass("sm_90")];
        assert_eq!(select_sass(&both, (9, 0), false).unwrap().arch, "sm_90");
    }

    #[test]
    fn reads_the_force_switch() {
        assert!(force_ptx(Some("1")) && force_ptx(Some("yes")));
        for off in [None, Some("0"), Some("false"), Some(""), Some(" ")] {
            assert!(!force_ptx(off), "{off:?}");
        }
    }
}
