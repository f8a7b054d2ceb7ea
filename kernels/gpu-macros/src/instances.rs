//! Generic kernels: `#[kernel(instances(f32, f64))] pub fn axpy<T: Float>(...)`.
//!
//! A PTX entry point has one concrete signature, so a generic kernel becomes one entry per
//! listed type, named `<kernel>_<type>` (`axpy_f32`, `axpy_f64`). Each instance is the kernel
//! with its type parameters replaced by the instance's types in the function's tokens, as the
//! instantiation macros it replaces did (`macro_rules!` with a `$t:ident`): the body may then use
//! the type where stable Rust refuses a generic parameter, e.g. in a const generic argument
//! `{ items_per_thread::<T>() }`. The declared bounds are still checked for every listed type.
//!
//! On the host the macro also emits the generic kernel type `axpy<T>` (implementing
//! `KernelType` for the listed types only, so a launch with another type does not compile) and,
//! in each instance's signature record, the generic parameter types the builder writes the
//! generic launcher `module.axpy::<T>(...)` from.

use proc_macro2::{Delimiter, Group, Spacing, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Error, FnArg, GenericParam, Generics, Ident, ItemFn, Type};

use crate::kernel::{Instance, KernelAttr, classify_elem, expand_one};

pub fn expand(func: &ItemFn, attr: &KernelAttr) -> syn::Result<TokenStream> {
    let generics = &func.sig.generics;
    let name = &func.sig.ident;
    let Some(list) = &attr.instances else {
        return Err(Error::new_spanned(
            generics,
            "a generic kernel needs the types to compile it for: \
             #[kernel(instances(f32, f64))] (a PTX entry point has one concrete signature)",
        ));
    };
    let mut type_params = Vec::new();
    for param in &generics.params {
        match param {
            GenericParam::Type(t) => type_params.push(t.ident.clone()),
            other => {
                return Err(Error::new_spanned(
                    other,
                    "a generic kernel takes type parameters only (no lifetimes or const \
                     parameters)",
                ));
            }
        }
    }
    let instances = Punctuated::<Type, syn::Token![,]>::parse_terminated.parse2(list.clone())?;
    let mut generic_types = Vec::new();
    for input in &func.sig.inputs {
        if let FnArg::Typed(arg) = input {
            generic_types.push(classify_elem(&arg.ty)?);
        }
    }
    // Parameter types that mention a type parameter without being one (`[T; 4]`, `Pair<T>`):
    // the host names them through generic aliases, one per parameter.
    let mut generic_aliases = Vec::new();
    for (input, ty) in func.sig.inputs.iter().zip(&generic_types) {
        let FnArg::Typed(arg) = input else { continue };
        let syn::Pat::Ident(pat) = &*arg.pat else {
            continue;
        };
        let uses: Vec<&Ident> = type_params
            .iter()
            .filter(|p| mentions(&quote!(#ty), p))
            .collect();
        let is_param = matches!(ty, Type::Path(p) if p.qself.is_none()
            && p.path.get_ident().is_some_and(|i| type_params.contains(i)));
        if !uses.is_empty() && !is_param {
            let alias = &pat.ident;
            generic_aliases.push(quote!(pub type #alias<#(#uses),*> = #ty;));
        }
    }

    let mut out = TokenStream::new();
    let mut names = Vec::new();
    let (impl_generics, _, where_clause) = generics.split_for_impl();
    for instance in &instances {
        let args: Vec<Type> = match (type_params.len(), instance) {
            (1, ty) => vec![ty.clone()],
            (n, Type::Tuple(t)) if t.elems.len() == n => t.elems.iter().cloned().collect(),
            (n, ty) => {
                return Err(Error::new_spanned(
                    ty,
                    format!(
                        "`{name}` has {n} type parameters: write each instance as a tuple of {n} \
                         types, e.g. instances((f32, u32))"
                    ),
                ));
            }
        };
        let suffix = args
            .iter()
            .map(type_suffix)
            .collect::<syn::Result<Vec<_>>>()?
            .join("_");
        let entry = format_ident!("{}_{}", name, suffix);
        if names.contains(&entry) {
            return Err(Error::new_spanned(
                instance,
                format!("two instances are both named `{entry}`"),
            ));
        }
        names.push(entry.clone());

        let mut concrete = func.clone();
        concrete.sig.generics = Generics::default();
        concrete.sig.ident = entry.clone();
        concrete.attrs.push(syn::parse_quote!(#[doc(hidden)]));
        concrete
            .attrs
            .push(syn::parse_quote!(#[allow(non_snake_case)]));
        let concrete: ItemFn = syn::parse2(substitute(quote!(#concrete), &type_params, &args))?;
        let kernel_type = quote!(#name<#(#args),*>);
        let info = Instance {
            generic: name,
            type_params: &type_params,
            generic_types: generic_types.clone(),
        };
        out.extend(expand_one(&concrete, attr, &kernel_type, Some(&info))?);
        // The declared bounds hold for the instance (the substituted body alone would accept a
        // type the signature excludes). On both targets, so that the bounds' imports are used;
        // the function is never instantiated, so no code is generated.
        out.extend(quote! {
            const _: () = {
                #[allow(dead_code)]
                fn __gpu_bounds #impl_generics () #where_clause {}
                let _ = __gpu_bounds::<#(#args),*>;
            };
        });
    }

    let listed = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    // The kernel's own documentation goes on its type: on the host, the type is what is
    // public of it (the instances' functions are hidden).
    let docs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let doc = format!(
        " The generic kernel `{name}` as a type: `module.launch::<{name}<..>>(stream, config, \
         args)` launches the instance for the type arguments. Instances (PTX entries): {listed}; \
         other type arguments do not compile."
    );
    let types_mod = format_ident!("__gpu_kernel_types_{}", name);
    out.extend(quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #doc]
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_camel_case_types, dead_code)]
        pub struct #name<#(#type_params),*> {
            _private: ::core::marker::PhantomData<fn() -> (#(#type_params,)*)>,
        }

        /// The generic kernel's parameter types that depend on its type parameters (used by
        /// the generated generic launcher).
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_camel_case_types, unused_imports)]
        pub mod #types_mod {
            use super::*;
            #(#generic_aliases)*
        }
    });
    Ok(out)
}

/// Whether `tokens` mention the identifier `ident` (at any depth).
pub fn mentions(tokens: &TokenStream, ident: &Ident) -> bool {
    tokens.clone().into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => &i == ident,
        TokenTree::Group(g) => mentions(&g.stream(), ident),
        _ => false,
    })
}

/// `tokens` with each type parameter (an identifier not after `.`, `'` or `::`) replaced by its
/// instance type.
fn substitute(tokens: TokenStream, params: &[Ident], args: &[Type]) -> TokenStream {
    let mut out = TokenStream::new();
    // The two previous punctuation marks (None after anything else), to recognize `::`.
    let mut prev: [Option<(char, Spacing)>; 2] = [None, None];
    for tt in tokens {
        match tt {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), substitute(g.stream(), params, args));
                group.set_span(g.span());
                out.extend([TokenTree::Group(group)]);
                prev = [None, None];
            }
            TokenTree::Ident(i) => {
                let after_path_or_field = matches!(
                    prev,
                    [_, Some(('.' | '\'', _))] | [Some((':', Spacing::Joint)), Some((':', _))]
                );
                match params.iter().position(|p| p == &i) {
                    Some(k) if !after_path_or_field => {
                        // A path stays a path (`T::MAX` becomes `f32::MAX`); another type
                        // goes in an invisible group, so it stays one type (`x as [u8; 4]`).
                        let ty = &args[k];
                        match ty {
                            Type::Path(_) => out.extend(quote!(#ty)),
                            _ => out.extend([TokenTree::Group(Group::new(
                                Delimiter::None,
                                quote!(#ty),
                            ))]),
                        }
                    }
                    _ => out.extend([TokenTree::Ident(i)]),
                }
                prev = [None, None];
            }
            TokenTree::Punct(p) => {
                prev = [prev[1], Some((p.as_char(), p.spacing()))];
                out.extend([TokenTree::Punct(p)]);
            }
            other => {
                out.extend([other]);
                prev = [None, None];
            }
        }
    }
    out
}

/// The part of an instance's entry name that names its type: a path's last identifier with its
/// type arguments (`half::bf16` → `bf16`, `Vec2<f32>` → `Vec2_f32`), an array's element and
/// length (`[f32; 4]` → `f32x4`).
fn type_suffix(ty: &Type) -> syn::Result<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            let mut s = last.ident.to_string();
            if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                for arg in &args.args {
                    if let syn::GenericArgument::Type(t) = arg {
                        s.push('_');
                        s.push_str(&type_suffix(t)?);
                    }
                }
            }
            Ok(s)
        }
        Type::Array(a) => {
            let len = &a.len;
            let len = quote!(#len).to_string().replace(' ', "");
            if !len.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(Error::new_spanned(
                    &a.len,
                    "an instance array's length must be a literal or a constant's name",
                ));
            }
            Ok(format!("{}x{len}", type_suffix(&a.elem)?))
        }
        Type::Paren(p) => type_suffix(&p.elem),
        _ => Err(Error::new_spanned(
            ty,
            "an instance type must be a named type or an array (it names the PTX entry): use a \
             type alias",
        )),
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expand(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
        match crate::kernel::expand(attr, item) {
            Ok(tokens) => tokens.to_string(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn each_instance_is_an_entry_named_after_its_type() {
        let out = expand(
            quote!(instances(f32, half::bf16, [u8; 4])),
            quote!(
                pub fn axpy<T: Copy>(a: T, x: &[T], mut out: DisjointSlice<T>) {}
            ),
        );
        for entry in ["axpy_f32", "axpy_bf16", "axpy_u8x4"] {
            assert!(
                out.contains(&format!("fn {entry} (")),
                "{entry} missing: {out}"
            );
        }
        assert!(out.contains("pub struct axpy < T >"), "{out}");
        assert!(
            out.contains("KernelType for axpy < half :: bf16 >"),
            "{out}"
        );
    }

    #[test]
    fn the_type_parameter_is_replaced_as_a_type_not_as_a_field_or_path_segment() {
        let out = expand(
            quote!(instances(f32)),
            quote!(
                pub fn k<T: Copy>(x: &[T], mut out: DisjointSlice<T>) {
                    const N: usize = core::mem::size_of::<T>();
                    let m = T::MAX;
                    let f = p.T;
                    let g = other::T;
                }
            ),
        );
        assert!(out.contains("size_of :: < f32 >"), "{out}");
        assert!(out.contains("f32 :: MAX"), "{out}");
        assert!(out.contains("p . T"), "{out}");
        assert!(out.contains("other :: T"), "{out}");
    }

    #[test]
    fn bad_generic_kernels_are_refused() {
        let out = expand(
            quote!(),
            quote!(
                pub fn k<T>(x: &[T]) {}
            ),
        );
        assert!(out.contains("a generic kernel needs the types"), "{out}");
        let out = expand(
            quote!(instances(f32)),
            quote!(
                pub fn k(x: &[f32]) {}
            ),
        );
        assert!(out.contains("no type parameter"), "{out}");
        let out = expand(
            quote!(instances(f32, u32)),
            quote!(
                pub fn k<A, B>(x: &[A], y: &[B]) {}
            ),
        );
        assert!(out.contains("write each instance as a tuple of 2"), "{out}");
        let out = expand(
            quote!(instances(f32, f32)),
            quote!(
                pub fn k<T>(x: &[T]) {}
            ),
        );
        assert!(out.contains("both named `k_f32`"), "{out}");
        let out = expand(
            quote!(instances(f32)),
            quote!(
                pub fn k<const N: usize>(x: &[f32]) {}
            ),
        );
        assert!(out.contains("type parameters only"), "{out}");
    }
}
