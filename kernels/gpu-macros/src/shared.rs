//! `shared_array!`: a statically sized block-shared array.
//!
//! `shared_array!(T, N)` or `shared_array!([T; N])` expands to
//! 1. a PTX declaration `.shared .align A .b8 NAME[BYTES];` through `global_asm!`, with `A`
//!    and `BYTES` computed by the compiler from the concrete type (`const` operands), and
//! 2. an expression: the declaration's 32-bit shared-window address (`mov.u32 r, NAME;`)
//!    wrapped as `gpu::shared::SharedArray<T, N>`.
//!
//! `NAME` must be unique in the final PTX module, which fat LTO builds from every crate of the
//! kernel: it combines the crate name, the call site (file, line, column) and a per-process
//! counter (two expansions at one site, e.g. inside a `macro_rules!`, get different names).
//! On the host the declaration is left out and the expression panics, like every intrinsic.
//!
//! `global_asm!` must be in item position, so the declaration sits in a generated module
//! inside the caller's block, which imports the enclosing module with `use super::*`: the
//! element type and length must be nameable at module level (primitive types, items of the
//! enclosing module or its imports, absolute paths), not items declared inside the function or
//! generic parameters, and not paths starting with `super::`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Token, Type};

/// The macro's input: `T, N` or `[T; N]`.
struct ArraySpec {
    elem: Type,
    len: Expr,
}

impl Parse for ArraySpec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let ty: Type = input.parse()?;
        let spec = if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            let len: Expr = input.parse()?;
            ArraySpec { elem: ty, len }
        } else if let Type::Array(array) = ty {
            ArraySpec {
                elem: *array.elem,
                len: array.len,
            }
        } else {
            return Err(syn::Error::new_spanned(
                ty,
                "expected `shared_array!(T, N)` or `shared_array!([T; N])`",
            ));
        };
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the array length"));
        }
        Ok(spec)
    }
}

pub fn expand(item: TokenStream) -> syn::Result<TokenStream> {
    let ArraySpec { elem, len } = syn::parse2(item)?;
    let name = unique_name();
    let declaration = format!(".shared .align {{align}} .b8 {name}[{{bytes}}];");
    let address = format!("mov.u32 {{addr}}, {name};");
    let module = syn::Ident::new(&name, proc_macro2::Span::call_site());
    Ok(quote! {{
        // `global_asm!` is only accepted in item position, hence the module; `use super::*`
        // lets the element type and length name what the enclosing module can name.
        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        #[allow(unused_imports)]
        mod #module {
            use super::*;
            ::core::arch::global_asm!(
                #declaration,
                align = const ::gpu::shared::__static_align::<#elem>(),
                bytes = const ::gpu::shared::__static_bytes::<#elem, { #len }>(),
            );
        }
        #[cfg(target_arch = "nvptx64")]
        let __gpu_shared_addr: u32 = {
            let addr: u32;
            // SAFETY: takes the address of the array declared above; no memory access.
            unsafe {
                ::core::arch::asm!(#address, addr = out(reg32) addr, options(pure, nomem, nostack));
            }
            addr
        };
        // On the host (the simulator), the address of a static unique to this call site keys
        // the block's allocation of the array.
        #[cfg(not(target_arch = "nvptx64"))]
        let __gpu_shared_addr: u32 = {
            static __GPU_SHARED_SITE: u8 = 0;
            ::gpu::shared::__host_addr(
                &raw const __GPU_SHARED_SITE as usize,
                ::gpu::shared::__static_bytes::<#elem, { #len }>(),
                ::gpu::shared::__static_align::<#elem>(),
            )
        };
        // SAFETY: the address of a `.shared` declaration of `size_of::<[T; N]>()` bytes, at
        // least 16-byte aligned, that only this handle (and its copies) refers to.
        unsafe { ::gpu::shared::SharedArray::<#elem, { #len }>::__from_addr(__gpu_shared_addr) }
    }})
}

/// `__gpu_shared_<line>_<column>_<hash>`: readable in PTX, unique per expansion.
fn unique_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let serial = COUNTER.fetch_add(1, Ordering::Relaxed);
    let krate = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
    let (file, line, column) = call_site();
    let mut hasher = DefaultHasher::new();
    (&krate, &file, line, column, serial).hash(&mut hasher);
    format!("__gpu_shared_{line}_{column}_{:016x}", hasher.finish())
}

/// File, line and column of the macro call (zeros outside a macro expansion, e.g. in tests).
fn call_site() -> (String, usize, usize) {
    if proc_macro::is_available() {
        let span = proc_macro::Span::call_site();
        (span.file(), span.line(), span.column())
    } else {
        (String::new(), 0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_parse() {
        let a: ArraySpec = syn::parse_str("f32, 256").unwrap();
        let elem = &a.elem;
        assert_eq!(quote!(#elem).to_string(), quote!(f32).to_string());
        let b: ArraySpec = syn::parse_str("[u32; TILE * 2]").unwrap();
        let len = &b.len;
        assert_eq!(quote!(#len).to_string(), quote!(TILE * 2).to_string());
        assert!(syn::parse_str::<ArraySpec>("f32").is_err());
        assert!(syn::parse_str::<ArraySpec>("f32, 4, 5").is_err());
    }

    #[test]
    fn names_are_unique() {
        assert_ne!(unique_name(), unique_name());
    }

    #[test]
    fn expansion_declares_and_addresses_the_same_symbol() {
        let out = expand(quote!(f32, 128)).unwrap().to_string();
        let name = out
            .split("mov.u32 {addr}, ")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        assert!(out.contains(&format!(".b8 {name}[{{bytes}}]")), "{out}");
    }
}
