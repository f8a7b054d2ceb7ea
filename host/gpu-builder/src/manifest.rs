//! The manifest written next to each PTX module: what the host needs to know to load and launch
//! the module's kernels without reading the PTX itself.

use serde::{Deserialize, Serialize};

/// Everything the host side needs about one PTX module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The kernel crate's Rust name, e.g. `example_kernels`.
    pub crate_name: String,
    /// Target architecture, e.g. `sm_80`.
    pub arch: String,
    /// PTX ISA version from the module's `.version` line, e.g. `7.0`.
    pub ptx_version: String,
    /// File name of the PTX module, next to the manifest.
    pub ptx_file: String,
    pub kernels: Vec<KernelInfo>,
    /// Module-scope shared memory variables (from `shared_array!`, and the dynamic window).
    pub shared: Vec<SharedVar>,
}

impl Manifest {
    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// One `.entry` of the module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelInfo {
    pub name: String,
    /// The Rust module the kernel was defined in (`crate::path`), from its `#[kernel]` record.
    /// `None` for entry points not written with `#[kernel]`; those get no typed launcher.
    pub rust_module: Option<String>,
    /// Rust-level parameters, from the `#[kernel]` record (empty when `rust_module` is `None`).
    pub params: Vec<ParamInfo>,
    /// Whether the kernel is an `unsafe fn`: its launcher is then `unsafe` as well, and its
    /// caller upholds the kernel's safety contract.
    #[serde(default, rename = "unsafe", skip_serializing_if = "std::ops::Not::not")]
    pub is_unsafe: bool,
    /// For an instance of a generic kernel (`#[kernel(instances(...))]`): the generic kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic: Option<GenericInfo>,
    /// The parameters of the PTX entry, in order, as the driver sees them.
    pub ptx_params: Vec<PtxParam>,
    /// Bytes of static shared memory the kernel references (through any function it calls).
    /// ptxas' figure (`gpu_host::Kernel` reports it at run time) is authoritative; this one is
    /// the sum of the variables' sizes.
    pub static_shared_bytes: u64,
    /// Whether the kernel reads the dynamic shared memory window (size chosen at launch).
    pub uses_dynamic_shared: bool,
}

/// How a Rust kernel parameter is passed: the ABI crate's type, written in manifests by its
/// [`ParamKind::name`] (`"slice"`, `"output"`, `"scalar"`, `"value"`).
pub use gpu_abi::ParamKind;

/// Serde for [`ParamKind`] by name (the ABI crate has no dependencies, serde included).
mod kind_by_name {
    use gpu_abi::ParamKind;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(kind: &ParamKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ParamKind, D::Error> {
        let name = String::deserialize(d)?;
        ParamKind::from_name(&name).ok_or_else(|| {
            D::Error::custom(format!(
                "unknown parameter kind `{name}` (expected slice, output, scalar or value)"
            ))
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamInfo {
    pub name: String,
    #[serde(with = "kind_by_name")]
    pub kind: ParamKind,
    /// Element type for slices and outputs, the type itself otherwise, as written in the kernel.
    pub ty: String,
    /// In a generic kernel's instance: `ty` as the generic kernel writes it (`T` for `f32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic_ty: Option<String>,
    /// In a generic kernel's instance: the type parameters `generic_ty` mentions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uses: Vec<String>,
}

/// The generic kernel an entry is an instance of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenericInfo {
    /// The generic kernel's name (`axpy` for the entry `axpy_f32`).
    pub name: String,
    /// Its type parameters, in order.
    pub type_params: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtxParam {
    pub name: String,
    /// PTX type: `.u64`, `.f32`, ... or `.b8` for by-value aggregates.
    pub ty: String,
    pub size: u64,
    pub align: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedVar {
    pub name: String,
    /// Size in bytes; `None` for `.extern` (dynamic) shared memory.
    pub bytes: Option<u64>,
    pub align: u64,
}
