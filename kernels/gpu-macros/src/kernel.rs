//! `#[kernel]`: a plain Rust function becomes a PTX entry point with a recorded signature.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::{Error, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type};

use gpu_abi::ParamKind;

/// How a kernel parameter crosses from host to device: a [`ParamKind`] with the types the macro
/// needs to rebuild it.
enum Param {
    /// `&[T]`: pointer + length, read-only.
    Slice { elem: Type },
    /// `DisjointSlice<T>`: pointer + length, each thread writes its own elements.
    Output { elem: Type },
    /// A primitive number passed by value.
    Scalar,
    /// A `DeviceCopy` struct or array passed by value.
    Value,
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attr = parse_attr(attr)?;
    let func: ItemFn = syn::parse2(item)?;
    if func.sig.generics.params.is_empty() {
        if let Some(list) = &attr.instances {
            return Err(Error::new_spanned(
                list,
                "`instances(...)` is for generic kernels: this kernel has no type parameter",
            ));
        }
        let ty = &func.sig.ident;
        return expand_one(&func, &attr, &quote!(#ty), None);
    }
    crate::instances::expand(&func, &attr)
}

/// A generic kernel's instance: what its record and kernel type say about the generic kernel.
pub struct Instance<'a> {
    /// The generic kernel's name (`axpy` for the instance `axpy_f32`).
    pub generic: &'a Ident,
    /// The type parameters' names, in order.
    pub type_params: &'a [Ident],
    /// Each Rust parameter's type in the generic signature (element type for slices).
    pub generic_types: Vec<Type>,
}

/// One PTX entry: `func` is non-generic (a generic kernel's instances arrive here with their
/// type arguments substituted). `kernel_type` is the host type that names it (`saxpy`, or
/// `axpy<f32>` for an instance, whose generic struct the caller emits).
pub fn expand_one(
    func: &ItemFn,
    attr: &KernelAttr,
    kernel_type: &TokenStream,
    instance: Option<&Instance>,
) -> syn::Result<TokenStream> {
    let KernelAttr {
        launch_bounds,
        block,
        grid_dims,
        ..
    } = *attr;
    let sig = &func.sig;
    debug_assert!(
        sig.generics.params.is_empty(),
        "instances arrive substituted"
    );
    if let ReturnType::Type(_, ty) = &sig.output {
        return Err(Error::new_spanned(
            ty,
            "a kernel returns nothing: write results through a DisjointSlice output",
        ));
    }
    if let Some(a) = &sig.asyncness {
        return Err(Error::new_spanned(a, "a kernel cannot be async"));
    }

    let name = &sig.ident;
    let mut entry_params = Vec::new();
    let mut rebuild = Vec::new();
    let mut call_args = Vec::new();
    let mut manifest_params = Vec::new();
    let mut value_checks = Vec::new();
    let mut aliases = Vec::new();
    // The kernel type's parameter list: one `gpu::kernel_type` marker per parameter.
    let mut markers = Vec::new();
    // The simulator entry reads each PTX-level parameter from the launch's parameter array.
    let mut sim_reads = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        let FnArg::Typed(arg) = input else {
            return Err(Error::new_spanned(input, "a kernel cannot take `self`"));
        };
        let Pat::Ident(pat) = &*arg.pat else {
            return Err(Error::new_spanned(
                &arg.pat,
                "kernel parameters must be plain names (no patterns)",
            ));
        };
        let param_name = &pat.ident;
        let ty = &*arg.ty;
        let param = classify(ty)?;
        let ptr = format_ident!("__gpu_ptr_{}", param_name);
        let len = format_ident!("__gpu_len_{}", param_name);
        let (kind, elem_str) = match &param {
            Param::Slice { elem } => {
                entry_params.push(quote!(#ptr: *const #elem, #len: usize));
                sim_reads.push(sim_read(&ptr, &quote!(*const #elem)));
                sim_reads.push(sim_read(&len, &quote!(usize)));
                // SAFETY (in generated code): the host launcher passes a device buffer of `len`
                // elements that no output parameter of this launch aliases.
                rebuild.push(quote!(let #param_name: #ty = unsafe { ::gpu::__private::slice_from_raw(#ptr, #len) };));
                (ParamKind::Slice, type_string(elem))
            }
            Param::Output { elem } => {
                entry_params.push(quote!(#ptr: *mut #elem, #len: usize));
                sim_reads.push(sim_read(&ptr, &quote!(*mut #elem)));
                sim_reads.push(sim_read(&len, &quote!(usize)));
                rebuild.push(quote!(let #param_name: #ty = unsafe { ::gpu::DisjointSlice::__from_raw(#ptr, #len) };));
                (ParamKind::Output, type_string(elem))
            }
            Param::Scalar => {
                entry_params.push(quote!(#param_name: #ty));
                sim_reads.push(sim_read(param_name, &quote!(#ty)));
                (ParamKind::Scalar, type_string(ty))
            }
            Param::Value => {
                entry_params.push(quote!(#param_name: #ty));
                sim_reads.push(sim_read(param_name, &quote!(#ty)));
                value_checks.push(quote!(::gpu::copy::assert_field_is_device_copy::<#ty>();));
                (ParamKind::Value, type_string(ty))
            }
        };
        let host_type = match &param {
            Param::Slice { elem } | Param::Output { elem } => elem.clone(),
            Param::Scalar | Param::Value => ty.clone(),
        };
        markers.push(match &param {
            Param::Slice { elem } => quote!(::gpu::kernel_type::Slice<#elem>),
            Param::Output { elem } => quote!(::gpu::kernel_type::Output<#elem>),
            Param::Scalar | Param::Value => quote!(::gpu::kernel_type::Value<#ty>),
        });
        aliases.push((param_name.clone(), host_type));
        call_args.push(quote!(#param_name));
        // A generic kernel's instance also records the parameter's generic type and the type
        // parameters it mentions: the builder writes the generic launcher from them.
        let generic = match instance {
            Some(inst) => {
                let generic_ty = &inst.generic_types[index];
                let uses: Vec<String> = inst
                    .type_params
                    .iter()
                    .filter(|p| crate::instances::mentions(&quote!(#generic_ty), p))
                    .map(|p| format!("\"{p}\""))
                    .collect();
                format!(
                    ",\"generic_ty\":\"{}\",\"uses\":[{}]",
                    json_escape(&type_string(generic_ty)),
                    uses.join(",")
                )
            }
            None => String::new(),
        };
        manifest_params.push(format!(
            "{{\"name\":\"{}\",\"kind\":\"{}\",\"ty\":\"{}\"{generic}}}",
            json_escape(&param_name.to_string()),
            kind.name(),
            json_escape(&elem_str)
        ));
    }

    // The record is JSON; `module_path!()` is spliced in by `concat!` so the host can name the
    // parameter type aliases below by their full path.
    let sig_head = format!("{{\"name\":\"{}\",\"module\":\"", name);
    let mut bounds = match launch_bounds {
        Some((threads, blocks)) => format!(",\"launch_bounds\":[{threads},{blocks}]"),
        None => String::new(),
    };
    // With an exact block shape the entry first tells the optimizer about it (sound: the PTX
    // entry gets `.reqntid`, so no launch with another shape runs).
    let assume_block = match block {
        Some([x, y, z]) => {
            bounds.push_str(&format!(",\"block\":[{x},{y},{z}]"));
            // SAFETY (in generated code): see above.
            quote!(unsafe { ::gpu::__private::assume_block_dim(#x, #y, #z) };)
        }
        None => quote!(),
    };
    // A declared grid shape lets the optimizer drop the unused block coordinates. The driver
    // knows nothing of it: the host refuses other grids before launching (the manifest's
    // `grid_dims`, a comment in the PTX), and nothing checks it on the device.
    let require_grid = match grid_dims {
        Some(dims) => {
            bounds.push_str(&format!(",\"grid_dims\":{dims}"));
            // SAFETY (in generated code): the launch contract above.
            quote!(unsafe { ::gpu::__private::assume_grid_dims(#dims) };)
        }
        None => quote!(),
    };
    // An `unsafe fn` kernel has a safety contract the launch must uphold: its launcher is
    // `unsafe` too.
    if sig.unsafety.is_some() {
        bounds.push_str(",\"unsafe\":true");
    }
    if let Some(inst) = instance {
        let params: Vec<String> = inst
            .type_params
            .iter()
            .map(|p| format!("\"{p}\""))
            .collect();
        bounds.push_str(&format!(
            ",\"generic\":{{\"name\":\"{}\",\"type_params\":[{}]}}",
            inst.generic,
            params.join(",")
        ));
    }
    let sig_tail = format!("\",\"params\":[{}]{bounds}}}", manifest_params.join(","));
    let sig_static = format_ident!("__gpu_kernel_signature_{}", name);
    let types_mod = format_ident!("__gpu_kernel_types_{}", name);
    let alias_items = aliases
        .iter()
        .map(|(param, ty)| quote!(pub type #param = #ty;));

    let attrs = &func.attrs;
    let vis = &func.vis;
    let body = &func.block;
    let unsafety = &sig.unsafety;
    let inputs = &sig.inputs;
    let inner = Ident::new("__gpu_kernel_body", Span::call_site());
    let sim_entry = format_ident!("__gpu_sim_entry_{}", name);
    let name_str = name.to_string();
    let param_names = aliases.iter().map(|(param, _)| param.to_string());
    // A generic kernel's struct is emitted once by the caller, for all its instances.
    let kernel_struct = match instance {
        Some(_) => quote!(),
        None => {
            let doc = format!(
                " The kernel [`{name}()`] as a type: `module.launch::<{name}>(stream, config, \
                 args)` launches it with `args` checked against its parameters at compile time \
                 (see `gpu::kernel_type`)."
            );
            // Hidden from rustdoc: a doc link `[`name`]` would otherwise be ambiguous between the
            // function and the type.
            quote! {
                #[doc = #doc]
                #[doc(hidden)]
                #[cfg(not(target_arch = "nvptx64"))]
                #[allow(non_camel_case_types, dead_code)]
                pub struct #name {
                    _private: (),
                }
            }
        }
    };
    let safety = match sig.unsafety {
        Some(_) => quote!(::gpu::kernel_type::Unsafe),
        None => quote!(::gpu::kernel_type::Safe),
    };

    Ok(quote! {
        #kernel_struct

        // SAFETY: `Params` is built from this very signature, parameter by parameter, as the PTX
        // entry below is.
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe impl ::gpu::kernel_type::KernelType for #kernel_type {
            const NAME: &'static str = #name_str;
            const PARAM_NAMES: &'static [&'static str] = &[#(#param_names),*];
            type Params = (#(#markers,)*);
            type Safety = #safety;
        }

        #[cfg(not(target_arch = "nvptx64"))]
        #(#attrs)*
        #[allow(dead_code)]
        #vis #unsafety fn #name(#inputs) #body

        #[cfg(target_arch = "nvptx64")]
        #(#attrs)*
        #[unsafe(no_mangle)]
        // An array by value (`[f32; 2]`) is a `.b8` parameter of its size and alignment, as a
        // `#[repr(C)]` struct is: sound for the PTX ABI, though not a C type.
        #[allow(improper_ctypes_definitions)]
        pub unsafe extern "ptx-kernel" fn #name(#(#entry_params),*) {
            #[inline(always)]
            #unsafety fn #inner(#inputs) #body
            const _: () = { #(#value_checks)* };
            #assume_block
            #require_grid
            #(#rebuild)*
            #[allow(unused_unsafe)]
            unsafe { #inner(#(#call_args),*) }
        }

        /// The kernel's entry point on the CPU simulator (`gpu::sim`): takes the same parameter
        /// array as `cuLaunchKernel`.
        ///
        /// # Safety
        /// `params` must hold one pointer per PTX parameter of this kernel, each to a value of
        /// that parameter's type, and the buffers they describe must be valid for the launch.
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_snake_case, unused_unsafe, unused_mut, unused_assignments)]
        pub unsafe fn #sim_entry(__gpu_params: *const *mut ::core::ffi::c_void) {
            let mut __gpu_index = 0usize;
            #(#sim_reads)*
            #(#rebuild)*
            unsafe { #name(#(#call_args),*) }
        }

        /// Signature record read by `gpu_builder` to write the module manifest.
        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        #[unsafe(no_mangle)]
        #[used]
        pub static #sig_static: [u8; {
            const RECORD: &str = ::core::concat!(#sig_head, ::core::module_path!(), #sig_tail);
            RECORD.len()
        }] = {
            const RECORD: &str = ::core::concat!(#sig_head, ::core::module_path!(), #sig_tail);
            let bytes = RECORD.as_bytes();
            let mut out = [0u8; RECORD.len()];
            let mut i = 0;
            while i < bytes.len() {
                out[i] = bytes[i];
                i += 1;
            }
            out
        };

        /// The kernel's parameter types as the host names them (used by generated launchers).
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_camel_case_types, unused_imports)]
        pub mod #types_mod {
            use super::*;
            #(#alias_items)*
            /// The kernel's type (for a generic kernel's instance, the generic type with its
            /// arguments).
            pub type __Kernel = #kernel_type;
        }
    })
}

/// `let <name>: <ty> = <next parameter>;` in the simulator entry.
fn sim_read(name: &Ident, ty: &TokenStream) -> TokenStream {
    quote! {
        // SAFETY (in generated code): the launcher passes one pointer per PTX parameter, each to
        // a value of the parameter's type (possibly unaligned).
        let #name: #ty = unsafe {
            (*__gpu_params.add(__gpu_index)).cast::<#ty>().read_unaligned()
        };
        __gpu_index += 1;
    }
}

/// What `#[kernel(...)]` declares about the launch shape.
#[derive(Default)]
pub struct KernelAttr {
    /// `launch_bounds(THREADS, MIN_BLOCKS)`: at most `THREADS` threads per block, and registers
    /// limited so that `MIN_BLOCKS` such blocks fit on one SM (PTX `.maxntid` and
    /// `.minnctapersm`, CUDA's `__launch_bounds__`).
    pub launch_bounds: Option<(u32, u32)>,
    /// `block(X, Y, Z)` (`Y`, `Z` default to 1): the only block shape the kernel runs with (PTX
    /// `.reqntid`; the driver and the host refuse any other). The kernel's code may then rely on
    /// it: `thread_idx_x() < X`, `block_dim_x() == X`, ... are known to the optimizer, which
    /// drops index checks they imply and folds the index arithmetic.
    pub block: Option<[u32; 3]>,
    /// `grid_dims(N)` (1 or 2): the grid has at most `N` dimensions (`gridDim.y == gridDim.z ==
    /// 1`, or `gridDim.z == 1`). The host refuses other launches and the entry traps on them;
    /// the kernel's code may rely on the unused block coordinates being 0.
    pub grid_dims: Option<u32>,
    /// `instances(A, B, ...)`: the types a generic kernel is compiled for, one PTX entry each
    /// (`(A, B)` tuples for several type parameters).
    pub instances: Option<TokenStream>,
}

/// Parses `#[kernel]`, `#[kernel(launch_bounds(THREADS, MIN_BLOCKS))]` or
/// `#[kernel(block(X, Y, Z))]` (integer literals), each optionally with `instances(...)`.
fn parse_attr(attr: TokenStream) -> syn::Result<KernelAttr> {
    let mut out = KernelAttr::default();
    if attr.is_empty() {
        return Ok(out);
    }
    let usage = "expected #[kernel], #[kernel(launch_bounds(THREADS, MIN_BLOCKS))] or \
                 #[kernel(block(X, Y, Z))] with integer literals, and/or grid_dims(1 or 2), \
                 and/or #[kernel(instances(TYPE, ...))] for a generic kernel";
    let items = syn::punctuated::Punctuated::<syn::ExprCall, syn::Token![,]>::parse_terminated
        .parse2(attr.clone())
        .map_err(|_| Error::new_spanned(&attr, usage))?;
    for call in &items {
        let name = match &*call.func {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        if name.as_deref() == Some("instances") {
            if call.args.is_empty() {
                return Err(Error::new_spanned(
                    call,
                    "list at least one type: instances(f32, ...)",
                ));
            }
            let args = &call.args;
            out.instances = Some(quote!(#args));
            continue;
        }
        let mut values = Vec::new();
        for arg in &call.args {
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(int),
                ..
            }) = arg
            else {
                return Err(Error::new_spanned(arg, usage));
            };
            let value: u32 = int.base10_parse()?;
            if value == 0 {
                return Err(Error::new_spanned(arg, "launch shapes must be at least 1"));
            }
            values.push(value);
        }
        match (name.as_deref(), values.as_slice()) {
            (Some("launch_bounds"), &[threads, blocks]) => {
                if threads > 1024 {
                    return Err(Error::new_spanned(
                        &call.args[0],
                        "a block has at most 1024 threads",
                    ));
                }
                out.launch_bounds = Some((threads, blocks));
            }
            (Some("block"), dims) if (1..=3).contains(&dims.len()) => {
                let mut b = [1u32; 3];
                b[..dims.len()].copy_from_slice(dims);
                if b.iter().map(|&d| u64::from(d)).product::<u64>() > 1024 || b[2] > 64 {
                    return Err(Error::new_spanned(
                        call,
                        "a block has at most 1024 threads (and at most 64 along z)",
                    ));
                }
                out.block = Some(b);
            }
            (Some("grid_dims"), &[dims]) => {
                if dims > 2 {
                    return Err(Error::new_spanned(
                        call,
                        "grid_dims(1) or grid_dims(2): a grid has 3 dimensions at most, and 3 \
                         is what a kernel without grid_dims allows",
                    ));
                }
                out.grid_dims = Some(dims);
            }
            _ => return Err(Error::new_spanned(call, usage)),
        }
    }
    if out.block.is_some() && out.launch_bounds.is_some() {
        return Err(Error::new_spanned(
            &attr,
            "give either block(...) (one exact block shape) or launch_bounds(...), not both: \
             PTX's .reqntid and .maxntid exclude each other",
        ));
    }
    Ok(out)
}

/// The type a parameter's host argument is built from: the element type of a slice or output,
/// the type itself otherwise.
pub fn classify_elem(ty: &Type) -> syn::Result<Type> {
    Ok(match classify(ty)? {
        Param::Slice { elem } | Param::Output { elem } => elem,
        Param::Scalar | Param::Value => ty.clone(),
    })
}

fn classify(ty: &Type) -> syn::Result<Param> {
    match ty {
        // An invisible group: a generic kernel's instance type (see `instances::substitute`).
        Type::Group(g) => classify(&g.elem),
        Type::Reference(r) => match &*r.elem {
            Type::Slice(s) if r.mutability.is_none() => Ok(Param::Slice {
                elem: (*s.elem).clone(),
            }),
            Type::Slice(_) => Err(Error::new_spanned(
                ty,
                "`&mut [T]` would give every thread the same mutable slice (aliased &mut); \
                 use `DisjointSlice<T>` for outputs",
            )),
            _ => Err(Error::new_spanned(
                ty,
                "kernel parameters take `&[T]` slices; pass other values by value",
            )),
        },
        Type::Path(p) if p.qself.is_none() => {
            let last = p
                .path
                .segments
                .last()
                .expect("a path has at least one segment");
            if last.ident == "DisjointSlice" {
                let PathArguments::AngleBracketed(args) = &last.arguments else {
                    return Err(Error::new_spanned(
                        ty,
                        "write `DisjointSlice<T>` with its element type",
                    ));
                };
                let elem = args.args.iter().find_map(|a| match a {
                    GenericArgument::Type(t) => Some(t.clone()),
                    _ => None,
                });
                return elem.map(|elem| Param::Output { elem }).ok_or_else(|| {
                    Error::new_spanned(ty, "write `DisjointSlice<T>` with its element type")
                });
            }
            if p.path.segments.len() == 1 && last.arguments.is_empty() {
                let ident = last.ident.to_string();
                if gpu_abi::is_scalar(&ident) {
                    return Ok(Param::Scalar);
                }
                if ident == "bool" || ident == "char" {
                    return Err(Error::new_spanned(
                        ty,
                        format!("`{ident}` is not a valid kernel parameter type; pass a u32"),
                    ));
                }
            }
            Ok(Param::Value)
        }
        Type::Array(_) => Ok(Param::Value),
        Type::Ptr(_) => Err(Error::new_spanned(
            ty,
            "raw pointer parameters are not supported; use `&[T]` or `DisjointSlice<T>`",
        )),
        _ => Err(Error::new_spanned(ty, "unsupported kernel parameter type")),
    }
}

/// The type as written, without token spacing: `glam :: Vec3` becomes `glam::Vec3`.
fn type_string(ty: &Type) -> String {
    quote!(#ty)
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

fn json_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
