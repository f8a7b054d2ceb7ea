//! Procedural macros for kernel crates. Use them through the `gpu` crate
//! (`gpu::kernel`, `gpu::shared_array!`, `gpu::DeviceCopy`), not directly.

use proc_macro::TokenStream;

mod device_copy;
mod instances;
mod kernel;
mod shared;

/// Turns a plain Rust function into a GPU kernel entry point.
///
/// Parameters may be read-only slices (`&[T]`), outputs (`DisjointSlice<T>`), scalars, or
/// `#[derive(DeviceCopy)]` structs passed by value. On the GPU target the function becomes an
/// `extern "ptx-kernel"` entry whose slice parameters arrive as pointer + length; the macro also
/// records the signature for the module manifest that typed host launchers are generated from.
/// On the host the function stays an ordinary Rust function, and a type of the same name (a
/// struct, in the type namespace) names the kernel for `module.launch::<name>(...)` (see
/// `gpu::kernel_type`).
///
/// Launch shapes the kernel's code may rely on: `launch_bounds(THREADS, MIN_BLOCKS)` (CUDA's
/// `__launch_bounds__`), or `block(X, Y, Z)`, the one block shape (PTX `.reqntid`); and
/// `grid_dims(1)` or `grid_dims(2)`, at most that many grid dimensions (the host refuses other
/// grids; the kernel does not check), so `thread::global_index()` is `blockIdx.x * blockDim.x +
/// threadIdx.x` as in CUDA C++, without the y and z terms of a 3-D grid.
///
/// `#[kernel(instances(f32, f64))]` on a generic function makes one PTX entry per listed type,
/// `<name>_<type>`, each the function with its type parameters replaced by the type (so the body
/// may use them where generic Rust cannot, e.g. in a const generic argument); the host gets a
/// generic launcher `module.name::<f32>(...)` and a type outside the list does not compile.
/// Several type parameters take tuples: `instances((u32, f32), (u8, f64))`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Implements `gpu::DeviceCopy` after checking, at compile time, that the type is `#[repr(C)]`
/// (or transparent), has only `DeviceCopy` fields and no padding bytes.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(item: TokenStream) -> TokenStream {
    device_copy::expand(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares a block-shared array: `let tile = shared_array!(f32, 256);`. See `gpu::shared`.
#[proc_macro]
pub fn shared_array(item: TokenStream) -> TokenStream {
    shared::expand(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
