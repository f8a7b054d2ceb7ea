//! Generic launchers: `module.axpy::<T>(...)` for a generic kernel
//! `#[kernel(instances(f32, f64))] fn axpy<T>(...)`, whose PTX entries are its instances
//! (`axpy_f32`, `axpy_f64`).
//!
//! The launcher is generic over the kernel's type parameters and launches the kernel type
//! `axpy<T>` (`#[kernel]` implements it for the listed types only): a type outside the list is
//! a compile error at the call. Its parameter types come from the instances' records, which
//! carry each parameter's generic type (`T`, `u32`, `[T; 2]`) and the type parameters it
//! mentions.

use crate::error::{Error, Result};
use crate::launchers::{arg_name, host_type, wl};
use crate::manifest::{GenericInfo, KernelInfo, Manifest, ParamInfo, ParamKind};

/// One generic launcher per generic kernel of `manifest`, as methods of the module type.
pub fn generate(w: &mut String, manifest: &Manifest) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for kernel in &manifest.kernels {
        let (Some(generic), Some(module)) = (&kernel.generic, &kernel.rust_module) else {
            continue;
        };
        if seen.contains(&generic.name.as_str()) {
            continue;
        }
        seen.push(&generic.name);
        let instances: Vec<&KernelInfo> = manifest
            .kernels
            .iter()
            .filter(|k| k.generic.as_ref().is_some_and(|g| g.name == generic.name))
            .collect();
        check(manifest, generic, &instances)?;
        launcher(w, generic, module, &instances);
    }
    Ok(())
}

/// One `Holds` impl per generic kernel, for all its instances: `Holds<axpy<T>>` for every `T`
/// with a kernel type, its position looked up by the instance's name at compile time. (One impl
/// per instance would do too, but then a type outside the list would fail the bound twice, the
/// second time with a list of every kernel of the module.)
pub fn holds(w: &mut String, manifest: &Manifest, positions: &[&str]) {
    let mut seen: Vec<&str> = Vec::new();
    for kernel in &manifest.kernels {
        let (Some(generic), Some(module)) = (&kernel.generic, &kernel.rust_module) else {
            continue;
        };
        if seen.contains(&generic.name.as_str()) {
            continue;
        }
        seen.push(&generic.name);
        let name = &generic.name;
        let type_params = generic.type_params.join(", ");
        let kernel_type = format!("::{module}::{name}<{type_params}>");
        let instances: Vec<String> = manifest
            .kernels
            .iter()
            .filter(|k| k.generic.as_ref().is_some_and(|g| g.name == *name))
            .filter_map(|k| {
                let index = positions.iter().position(|&p| p == k.name)?;
                Some(format!("({:?}, {index})", k.name))
            })
            .collect();
        wl(w, "");
        wl(
            w,
            format!(
                "    // SAFETY: each instance of `{name}` is at the position listed (its units' order, as\n    // `load_units` indexes them), and `#[kernel]` made its kernel type from its signature."
            ),
        );
        wl(
            w,
            format!("    unsafe impl<{type_params}> ::gpu_host::Holds<{kernel_type}> for Module"),
        );
        wl(w, "    where");
        wl(w, format!("        {kernel_type}: ::gpu_host::KernelType,"));
        wl(w, "    {");
        wl(
            w,
            "        const INDEX: usize = ::gpu_host::typed::position(",
        );
        wl(w, format!("            &[{}],", instances.join(", ")));
        wl(
            w,
            format!("            <{kernel_type} as ::gpu_host::KernelType>::NAME,"),
        );
        wl(w, "        );");
        wl(
            w,
            "        fn module(&self) -> &::gpu_host::Module {\n            &self.inner\n        }",
        );
        wl(w, "    }");
    }
}

/// The instances agree on the generic signature, and the launcher's name is free.
fn check(manifest: &Manifest, generic: &GenericInfo, instances: &[&KernelInfo]) -> Result<()> {
    let name = &generic.name;
    if manifest.kernel(name).is_some() || crate::launchers::METHODS.contains(&name.as_str()) {
        return Err(Error::msg(format!(
            "generic kernel `{name}`: its launcher's name is taken by a kernel or a method of \
             the generated module: rename it"
        )));
    }
    let first = instances[0];
    let shape = |k: &KernelInfo| -> Vec<(String, ParamKind, Option<String>)> {
        k.params
            .iter()
            .map(|p| (p.name.clone(), p.kind, p.generic_ty.clone()))
            .collect()
    };
    for k in &instances[1..] {
        if shape(k) != shape(first) || k.is_unsafe != first.is_unsafe {
            return Err(Error::msg(format!(
                "generic kernel `{name}`: instances `{}` and `{}` disagree on the generic \
                 signature",
                first.name, k.name
            )));
        }
    }
    Ok(())
}

/// The host type of a generic parameter (element type for slices and outputs), and whether it
/// needs a `DeviceCopy` bound (it depends on a type parameter).
fn generic_host_type(
    generic: &GenericInfo,
    module: &str,
    first: &KernelInfo,
    p: &ParamInfo,
) -> (String, bool) {
    let generic_ty = p.generic_ty.as_deref().unwrap_or(&p.ty);
    if p.uses.is_empty() {
        // The same type in every instance: the first instance's.
        (host_type(first, module, p), false)
    } else if generic.type_params.iter().any(|t| t == generic_ty) {
        (generic_ty.to_string(), false)
    } else {
        (
            format!(
                "::{module}::__gpu_kernel_types_{}::{}<{}>",
                generic.name,
                p.name,
                p.uses.join(", ")
            ),
            true,
        )
    }
}

fn launcher(w: &mut String, generic: &GenericInfo, module: &str, instances: &[&KernelInfo]) {
    let name = &generic.name;
    let first = instances[0];
    let type_params = generic.type_params.join(", ");
    let kernel_type = format!("::{module}::{name}<{type_params}>");
    let rust_sig: Vec<String> = first
        .params
        .iter()
        .map(|p| {
            let ty = p.generic_ty.as_deref().unwrap_or(&p.ty);
            match p.kind {
                ParamKind::Slice => format!("{}: &[{ty}]", p.name),
                ParamKind::Output => format!("{}: DisjointSlice<{ty}>", p.name),
                ParamKind::Scalar | ParamKind::Value => format!("{}: {ty}", p.name),
            }
        })
        .collect();
    let listed: Vec<String> = instances.iter().map(|k| format!("`{}`", k.name)).collect();
    wl(w, "");
    wl(
        w,
        format!(
            "        /// Launches the generic kernel `{name}::<{type_params}>({})` on `stream`.",
            rust_sig.join(", ")
        ),
    );
    wl(w, "        ///");
    wl(
        w,
        format!(
            "        /// Its instances (PTX entries): {}; other type arguments do not compile.",
            listed.join(", ")
        ),
    );
    wl(w, "        ///");
    wl(
        w,
        "        /// The configuration is checked against the device's and the kernel's limits first;",
    );
    wl(w, "        /// on error nothing is launched.");
    if first.is_unsafe {
        wl(w, "        ///");
        wl(w, "        /// # Safety");
        wl(
            w,
            format!(
                "        /// `{name}` is an `unsafe fn`: the caller upholds the safety contract in its documentation."
            ),
        );
    }
    let mut params = vec![
        "&self".to_string(),
        "stream: &::gpu_host::Stream".into(),
        "config: ::gpu_host::LaunchConfig".into(),
    ];
    let mut markers = Vec::new();
    let mut bounds: Vec<String> = generic
        .type_params
        .iter()
        .map(|t| format!("{t}: ::gpu_host::DeviceCopy"))
        .collect();
    for p in &first.params {
        let (ty, needs_bound) = generic_host_type(generic, module, first, p);
        if needs_bound {
            bounds.push(format!("{ty}: ::gpu_host::DeviceCopy"));
        }
        let arg = arg_name(p);
        let (param, marker) = match p.kind {
            ParamKind::Slice => (format!("{arg}: &::gpu_host::DeviceBuffer<{ty}>"), "Slice"),
            ParamKind::Output => (
                format!("{arg}: &mut ::gpu_host::DeviceBuffer<{ty}>"),
                "Output",
            ),
            ParamKind::Scalar | ParamKind::Value => (format!("{arg}: {ty}"), "Value"),
        };
        params.push(param);
        markers.push(format!("::gpu_host::typed::{marker}<{ty}>"));
    }
    let unsafe_ = if first.is_unsafe { "unsafe " } else { "" };
    wl(w, format!("        pub {unsafe_}fn {name}<{type_params}>("));
    for param in &params {
        wl(w, format!("            {param},"));
    }
    wl(w, "        ) -> ::gpu_host::Result<()>");
    wl(w, "        where");
    for bound in &bounds {
        wl(w, format!("            {bound},"));
    }
    // The instance's parameter list, spelled out so that `args` below has a known type for
    // every `T` (the kernel type's impl for one listed type is not visible to generic code).
    let safety = if first.is_unsafe {
        ""
    } else {
        ", Safety = ::gpu_host::typed::Safe"
    };
    wl(
        w,
        format!("            {kernel_type}: ::gpu_host::KernelType<Params = ("),
    );
    for marker in &markers {
        wl(w, format!("                {marker},"));
    }
    wl(w, format!("            ){safety}>,"));
    wl(
        w,
        format!("            Self: ::gpu_host::Holds<{kernel_type}>,"),
    );
    wl(w, "        {");
    let args: Vec<String> = first.params.iter().map(arg_name).collect();
    let tuple = match args.len() {
        1 => format!("({},)", args[0]),
        _ => format!("({})", args.join(", ")),
    };
    if first.is_unsafe {
        wl(
            w,
            "            // SAFETY: the kernel's contract is this function's caller's (it is `unsafe`).",
        );
        wl(
            w,
            format!(
                "            unsafe {{ self.launch_unsafe::<{kernel_type}>(stream, config, {tuple}) }}"
            ),
        );
    } else {
        wl(
            w,
            format!("            self.launch::<{kernel_type}>(stream, config, {tuple})"),
        );
    }
    wl(w, "        }");
}

#[cfg(test)]
mod tests {
    use crate::launchers;
    use crate::manifest::{GenericInfo, KernelInfo, Manifest, ParamInfo, ParamKind, PtxParam};
    use crate::sass::BuiltUnit;

    fn instance(ty: &str) -> KernelInfo {
        let param = |name: &str, kind, ty: &str, generic_ty: &str, uses: &[&str]| ParamInfo {
            name: name.into(),
            kind,
            ty: ty.into(),
            generic_ty: Some(generic_ty.into()),
            uses: uses.iter().map(|u| u.to_string()).collect(),
        };
        let ptx = |size| PtxParam {
            name: "p".into(),
            ty: ".u64".into(),
            size,
            align: 8,
        };
        KernelInfo {
            name: format!("axpy_{ty}"),
            rust_module: Some("demo::ops".into()),
            is_unsafe: false,
            generic: Some(GenericInfo {
                name: "axpy".into(),
                type_params: vec!["T".into()],
            }),
            params: vec![
                param("a", ParamKind::Scalar, ty, "T", &["T"]),
                param(
                    "pair",
                    ParamKind::Value,
                    &format!("[{ty};2]"),
                    "[T;2]",
                    &["T"],
                ),
                param("n", ParamKind::Scalar, "u32", "u32", &[]),
                param("out", ParamKind::Output, ty, "T", &["T"]),
            ],
            ptx_params: vec![ptx(8), ptx(16), ptx(4), ptx(8), ptx(8)],
            static_shared_bytes: 0,
            uses_dynamic_shared: false,
        }
    }

    fn generate(manifest: &Manifest) -> crate::error::Result<String> {
        let dir = std::env::temp_dir().join(format!("gpu-builder-generic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ptx = dir.join("axpy.ptx");
        std::fs::write(&ptx, ".version 7.0\n").unwrap();
        let units = [BuiltUnit {
            kernels: manifest.kernels.iter().map(|k| k.name.clone()).collect(),
            ptx_path: ptx,
            sass: vec![],
        }];
        launchers::generate(manifest, &units)
    }

    fn manifest() -> Manifest {
        Manifest {
            crate_name: "demo".into(),
            arch: "sm_80".into(),
            ptx_version: "7.0".into(),
            ptx_file: "demo.ptx".into(),
            kernels: vec![instance("f32"), instance("f64")],
            shared: vec![],
        }
    }

    #[test]
    fn a_generic_kernel_gets_one_generic_launcher_and_one_holds_impl() {
        let code = generate(&manifest()).unwrap();
        assert!(
            code.contains(
                "        pub fn axpy<T>(
            &self,
            stream: &::gpu_host::Stream,
            config: ::gpu_host::LaunchConfig,
            a: T,
            pair: ::demo::ops::__gpu_kernel_types_axpy::pair<T>,
            n: u32,
            out: &mut ::gpu_host::DeviceBuffer<T>,
        ) -> ::gpu_host::Result<()>
        where
            T: ::gpu_host::DeviceCopy,
            ::demo::ops::__gpu_kernel_types_axpy::pair<T>: ::gpu_host::DeviceCopy,
            ::demo::ops::axpy<T>: ::gpu_host::KernelType<Params = (
                ::gpu_host::typed::Value<T>,
                ::gpu_host::typed::Value<::demo::ops::__gpu_kernel_types_axpy::pair<T>>,
                ::gpu_host::typed::Value<u32>,
                ::gpu_host::typed::Output<T>,
            ), Safety = ::gpu_host::typed::Safe>,
            Self: ::gpu_host::Holds<::demo::ops::axpy<T>>,
        {
            self.launch::<::demo::ops::axpy<T>>(stream, config, (a, pair, n, out))
        }
"
            ),
            "{code}"
        );
        // The instances keep their own launchers, through the instance's kernel type.
        assert!(code.contains("pub fn axpy_f64("), "{code}");
        assert!(
            code.contains("self.launch::<::demo::ops::__gpu_kernel_types_axpy_f32::__Kernel>"),
            "{code}"
        );
        assert!(
            code.contains(
                "    unsafe impl<T> ::gpu_host::Holds<::demo::ops::axpy<T>> for Module
    where
        ::demo::ops::axpy<T>: ::gpu_host::KernelType,
    {
        const INDEX: usize = ::gpu_host::typed::position(
            &[(\"axpy_f32\", 0), (\"axpy_f64\", 1)],"
            ),
            "{code}"
        );
        assert_eq!(code.matches("unsafe impl").count(), 1, "{code}");
    }

    #[test]
    fn instances_that_disagree_or_a_taken_name_are_refused() {
        let mut m = manifest();
        m.kernels[1].params[2].generic_ty = Some("u64".into());
        let err = generate(&m).unwrap_err().to_string();
        assert!(err.contains("disagree on the generic signature"), "{err}");

        let mut m = manifest();
        let mut other = instance("u8");
        other.name = "axpy".into();
        other.generic = None;
        m.kernels.push(other);
        let err = generate(&m).unwrap_err().to_string();
        assert!(
            err.contains("generic kernel `axpy`: its launcher's name is taken"),
            "{err}"
        );
    }
}
