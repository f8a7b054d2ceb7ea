//! How a kernel parameter crosses from host to device.

/// The primitive numbers a kernel takes by value (`ParamKind::Scalar`), as Rust spells them.
///
/// `bool` and `char` are not among them: their valid bit patterns are narrower than the PTX
/// register that carries them, so a host value could become undefined behaviour on the device.
pub const SCALARS: &[&str] = &[
    "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize", "f32", "f64",
];

/// Whether `ty` (a type as written, e.g. `"f32"`) is one of [`SCALARS`].
pub fn is_scalar(ty: &str) -> bool {
    SCALARS.contains(&ty)
}

/// How a Rust kernel parameter is passed, and how many PTX parameters it lowers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// `&[T]`: device pointer then length (two PTX parameters), read-only.
    Slice,
    /// `DisjointSlice<T>`: device pointer then length, written by the kernel.
    Output,
    /// A primitive number ([`SCALARS`]) by value.
    Scalar,
    /// A `DeviceCopy` struct or array by value.
    Value,
}

impl ParamKind {
    /// Every kind, in declaration order.
    pub const ALL: [ParamKind; 4] = [
        ParamKind::Slice,
        ParamKind::Output,
        ParamKind::Scalar,
        ParamKind::Value,
    ];

    /// How many PTX parameters this kind lowers to.
    pub const fn ptx_param_count(self) -> usize {
        match self {
            ParamKind::Slice | ParamKind::Output => 2,
            ParamKind::Scalar | ParamKind::Value => 1,
        }
    }

    /// The kind's name in a kernel's signature record and in manifests: `"slice"`, `"output"`,
    /// `"scalar"` or `"value"`.
    pub const fn name(self) -> &'static str {
        match self {
            ParamKind::Slice => "slice",
            ParamKind::Output => "output",
            ParamKind::Scalar => "scalar",
            ParamKind::Value => "value",
        }
    }

    /// The kind named `name` (see [`ParamKind::name`]).
    pub fn from_name(name: &str) -> Option<ParamKind> {
        ParamKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in ParamKind::ALL {
            assert_eq!(ParamKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(ParamKind::from_name("pointer"), None);
    }

    #[test]
    fn scalars_are_the_primitive_numbers() {
        assert!(is_scalar("f32") && is_scalar("usize"));
        assert!(!is_scalar("bool") && !is_scalar("char") && !is_scalar("f16"));
    }
}
