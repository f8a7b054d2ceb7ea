//! Kernels as types: what `#[kernel]` tells the host about a kernel in Rust's type system,
//! so that library code can launch it with `module.launch::<K>(stream, config, args)`.
//!
//! On host builds `#[kernel]` emits, next to the kernel function `saxpy`, a type of the same
//! name (a struct, so it lives in the type namespace and does not clash with the function) that
//! implements [`KernelType`]: the PTX entry's name, the parameter names, and the parameter list
//! as a tuple of the markers [`Slice`], [`Output`] and [`Value`]. `gpu-host` maps that tuple to
//! the host arguments (`&DeviceBuffer<T>`, `&mut DeviceBuffer<T>`, `T`), so a wrong argument is
//! a compile error, as with the generated per-kernel launchers. The kernel's position in its
//! module is not here: the macro cannot know it, the builder does and writes it into the module
//! type it generates (`gpu_host::Holds`).

use core::marker::PhantomData;

/// A `#[kernel]` as a type. Implemented by `#[kernel]` only.
///
/// # Safety
/// [`KernelType::Params`] lists the PTX entry [`KernelType::NAME`]'s parameters exactly (kinds,
/// order, element and value types): host launches push arguments by it without any other check
/// of their types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel, or not one of a generic kernel's instances",
    label = "no PTX entry for this type",
    note = "a generic kernel exists for the types in its `#[kernel(instances(...))]` list only"
)]
pub unsafe trait KernelType: 'static {
    /// The PTX entry's name (for a generic kernel's instance, the mangled name, e.g. `axpy_f32`).
    const NAME: &'static str;
    /// The Rust parameter names, in order (for error messages).
    const PARAM_NAMES: &'static [&'static str];
    /// The parameters: a tuple of [`Slice`], [`Output`] and [`Value`], one per Rust parameter.
    type Params;
    /// [`Safe`], or [`Unsafe`] for an `unsafe fn` kernel (a type rather than a marker trait, so
    /// that launching an `unsafe fn` kernel safely is a short type mismatch, `Safe` against
    /// `Unsafe`, not a list of every safe kernel).
    type Safety;
}

/// [`KernelType::Safety`] of a kernel that is not an `unsafe fn`: launching it with valid
/// arguments is safe.
pub enum Safe {}

/// [`KernelType::Safety`] of an `unsafe fn` kernel: only an `unsafe` launch accepts it.
pub enum Unsafe {}

/// `&[T]` in the kernel: a buffer the kernel reads (pointer and length).
pub struct Slice<T>(PhantomData<T>);

/// `DisjointSlice<T>` in the kernel: a buffer the kernel writes (pointer and length).
pub struct Output<T>(PhantomData<T>);

/// A scalar or `DeviceCopy` value passed by value.
pub struct Value<T>(PhantomData<T>);
