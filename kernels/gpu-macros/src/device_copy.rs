//! `#[derive(DeviceCopy)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Error, Fields};

pub fn expand(item: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(item)?;
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &input.generics,
            "#[derive(DeviceCopy)] does not support generic types",
        ));
    }
    let has_stable_layout = input.attrs.iter().any(|attr| {
        let mut stable = false;
        if attr.path().is_ident("repr") {
            let _ = attr.parse_nested_meta(|meta| {
                stable |= meta.path.is_ident("C") || meta.path.is_ident("transparent");
                Ok(())
            });
        }
        stable
    });
    if !has_stable_layout {
        return Err(Error::new_spanned(
            name,
            "#[derive(DeviceCopy)] needs #[repr(C)] (or #[repr(transparent)]): the host and the GPU must agree on the layout",
        ));
    }
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(f) => f.named.iter().map(|f| &f.ty).collect::<Vec<_>>(),
            Fields::Unnamed(f) => f.unnamed.iter().map(|f| &f.ty).collect(),
            Fields::Unit => Vec::new(),
        },
        _ => {
            return Err(Error::new_spanned(
                name,
                "#[derive(DeviceCopy)] supports structs only",
            ));
        }
    };
    Ok(quote! {
        const _: () = {
            #( ::gpu::copy::assert_field_is_device_copy::<#fields>(); )*
            ::gpu::copy::assert_no_padding(
                ::core::mem::size_of::<#name>(),
                &[#( ::core::mem::size_of::<#fields>() ),*],
                ::core::stringify!(#name),
            );
        };
        // SAFETY: checked above: #[repr(C)]/transparent, every field DeviceCopy, no padding.
        unsafe impl ::gpu::DeviceCopy for #name {}
    })
}
