//! GPU architectures a kernel crate can be compiled for, and the PTX ISA version each needs.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// A compute capability, e.g. `sm_80` (A100) or `sm_90` (H100), or an architecture-specific
/// target such as `sm_90a`.
///
/// The default is `sm_80`: its PTX runs on Ampere and every newer GPU (the driver JIT-compiles
/// PTX forward). Choose `sm_90` for Hopper-only instructions (TMA, mbarrier transaction counts,
/// clusters), and `sm_90a` for the instructions that exist on sm_90 alone (`wgmma`,
/// `setmaxnreg`): PTX for an `a` target loads only on GPUs of exactly that compute capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// `major * 10 + minor`, e.g. 80, 86, 90.
    pub sm: u32,
    /// The architecture-specific variant (`sm_90a`): its features do not carry forward.
    pub specific: bool,
}

/// Architectures LLVM 22's NVPTX backend and ptxas 13.0 both accept, with the lowest PTX ISA
/// version that supports each (PTX ISA manual, "PTX ISA version" table).
const KNOWN: &[(u32, u32)] = &[
    (75, 63),
    (80, 70),
    (86, 71),
    (87, 74),
    (89, 78),
    (90, 78),
    (100, 86),
    (120, 87),
];

/// Architectures with an `a` variant that this toolchain handles (LLVM 22 knows more, e.g.
/// sm_100a; they are added when something here needs them).
const SPECIFIC: &[u32] = &[90];

impl Arch {
    pub const SM_80: Arch = Arch {
        sm: 80,
        specific: false,
    };
    pub const SM_90: Arch = Arch {
        sm: 90,
        specific: false,
    };
    /// Hopper with its architecture-specific instructions (`wgmma`, `setmaxnreg`).
    pub const SM_90A: Arch = Arch {
        sm: 90,
        specific: true,
    };

    pub fn new(sm: u32) -> Result<Arch, Error> {
        if KNOWN.iter().any(|&(s, _)| s == sm) {
            Ok(Arch {
                sm,
                specific: false,
            })
        } else {
            Err(Error::msg(format!(
                "unsupported GPU architecture sm_{sm}; supported: {}",
                KNOWN
                    .iter()
                    .map(|(s, _)| format!("sm_{s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }

    /// The PTX ISA version written in `.version`, as `major * 10 + minor` (e.g. 78 for 7.8).
    ///
    /// sm_90 uses 8.0 rather than its minimum 7.8 so Hopper features (clusters, TMA,
    /// `fence.proxy.async`) are available to kernels built for it.
    pub fn ptx_isa(self) -> u32 {
        if self.sm == 90 {
            return 80;
        }
        KNOWN
            .iter()
            .find(|&&(s, _)| s == self.sm)
            .map(|&(_, v)| v)
            .expect("Arch::new validated it")
    }

    /// `-C target-feature` value selecting the PTX ISA version, e.g. `+ptx80`.
    pub fn ptx_feature(self) -> String {
        format!("+ptx{}", self.ptx_isa())
    }

    /// The architecture-specific variant of this architecture, e.g. `sm_90a` for `sm_90`.
    pub fn specific(self) -> Result<Arch, Error> {
        if SPECIFIC.contains(&self.sm) {
            Ok(Arch {
                specific: true,
                ..self
            })
        } else {
            Err(Error::msg(format!(
                "sm_{}a does not exist or is not supported; architecture-specific targets: {}",
                self.sm,
                SPECIFIC
                    .iter()
                    .map(|s| format!("sm_{s}a"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }

    /// `--cfg` names the device library keys features on, so a kernel crate that uses an
    /// instruction its target lacks fails to compile with a missing-item error instead of at
    /// `ptxas`: `gpu_sm90` (TMA, mbarrier transaction counts) for sm_90 and newer, `gpu_sm90a`
    /// (`wgmma`) for sm_90a only.
    pub fn cfgs(self) -> Vec<&'static str> {
        let mut cfgs = Vec::new();
        if self.sm >= 90 {
            cfgs.push("gpu_sm90");
        }
        if self.sm == 90 && self.specific {
            cfgs.push("gpu_sm90a");
        }
        cfgs
    }

    pub fn all() -> impl Iterator<Item = Arch> {
        KNOWN.iter().map(|&(sm, _)| Arch {
            sm,
            specific: false,
        })
    }
}

impl Default for Arch {
    fn default() -> Self {
        Arch::SM_80
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm, if self.specific { "a" } else { "" })
    }
}

impl FromStr for Arch {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let digits = s
            .trim()
            .trim_start_matches("sm_")
            .trim_start_matches("compute_");
        let (digits, specific) = match digits.strip_suffix('a') {
            Some(d) => (d, true),
            None => (digits, false),
        };
        let sm = digits.parse().map_err(|_| {
            Error::msg(format!(
                "`{s}` is not a GPU architecture (expected e.g. sm_80, sm_90 or sm_90a)"
            ))
        })?;
        let arch = Arch::new(sm)?;
        if specific { arch.specific() } else { Ok(arch) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_maps_ptx_versions() {
        assert_eq!("sm_80".parse::<Arch>().unwrap().ptx_feature(), "+ptx70");
        assert_eq!("90".parse::<Arch>().unwrap().ptx_feature(), "+ptx80");
        assert!(
            "sm_61"
                .parse::<Arch>()
                .unwrap_err()
                .to_string()
                .contains("unsupported")
        );
        assert!("hopper".parse::<Arch>().is_err());
        let sm90a: Arch = "sm_90a".parse().unwrap();
        assert_eq!(sm90a, Arch::SM_90A);
        assert_eq!(sm90a.to_string(), "sm_90a");
        assert_eq!(sm90a.ptx_feature(), "+ptx80");
        assert_eq!(sm90a.cfgs(), ["gpu_sm90", "gpu_sm90a"]);
        assert_eq!(Arch::SM_90.cfgs(), ["gpu_sm90"]);
        assert!(Arch::SM_80.cfgs().is_empty());
        assert!("sm_80a".parse::<Arch>().is_err());
    }
}
