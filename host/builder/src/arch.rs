//! GPU architectures a kernel crate can be compiled for, and the PTX ISA version each needs.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// A compute capability, e.g. `sm_80` (A100) or `sm_90` (H100).
///
/// The default is `sm_80`: its PTX runs on Ampere and every newer GPU (the driver JIT-compiles
/// PTX forward). Choose `sm_90` for Hopper-only instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// `major * 10 + minor`, e.g. 80, 86, 90.
    pub sm: u32,
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

impl Arch {
    pub const SM_80: Arch = Arch { sm: 80 };
    pub const SM_90: Arch = Arch { sm: 90 };

    pub fn new(sm: u32) -> Result<Arch, Error> {
        if KNOWN.iter().any(|&(s, _)| s == sm) {
            Ok(Arch { sm })
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

    pub fn all() -> impl Iterator<Item = Arch> {
        KNOWN.iter().map(|&(sm, _)| Arch { sm })
    }
}

impl Default for Arch {
    fn default() -> Self {
        Arch::SM_80
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.sm)
    }
}

impl FromStr for Arch {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let digits = s
            .trim()
            .trim_start_matches("sm_")
            .trim_start_matches("compute_");
        let sm = digits.parse().map_err(|_| {
            Error::msg(format!(
                "`{s}` is not a GPU architecture (expected e.g. sm_80 or sm_90)"
            ))
        })?;
        Arch::new(sm)
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
    }
}
