//! Typed launches by kernel type: `module.launch::<K>(stream, config, args)`.
//!
//! `#[kernel]` makes each kernel a type implementing [`KernelType`] (its PTX entry's name and
//! its parameter list as [`Slice`] / [`Output`] / [`Value`] markers); the generated module type
//! implements [`Holds<K>`] for each of its kernels, with the kernel's position in the module.
//! From the two, `launch::<K>` takes `args` as the tuple [`Args<K>`] (`&DeviceBuffer<T>` for
//! a slice, `&mut DeviceBuffer<T>` for an output, `T` for a value), pushes them in order and
//! launches: the argument types are checked at compile time, the configuration and buffers at
//! run time exactly as by the generated per-kernel launchers, which are written on top of it.
//!
//! Library code that picks a kernel by type (one element type or another) names the kernel
//! type instead of a launcher function: `module.launch::<histogram_even<T>>(...)`.

use crate::{DeviceBuffer, DeviceCopy, KernelLaunch, LaunchConfig, Module, Result, Stream};

pub use gpu::kernel_type::{KernelType, Output, Safe, Slice, Unsafe, Value};

/// Position of the kernel `name` in `instances` (`(name, position)` pairs), at compile time: a
/// generic kernel's `Holds` impl finds its instance's position with it.
#[doc(hidden)]
pub const fn position(instances: &[(&str, usize)], name: &str) -> usize {
    let mut i = 0;
    while i < instances.len() {
        let (candidate, index) = instances[i];
        if candidate.len() == name.len() {
            let (a, b) = (candidate.as_bytes(), name.as_bytes());
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return index;
            }
        }
        i += 1;
    }
    panic!("a generic kernel's instance is missing from its module")
}

/// A generated module type that holds the kernel `K`. Implemented by the launchers
/// `gpu_builder` generates, one impl per kernel of the module.
///
/// # Safety
/// The kernel at [`Holds::INDEX`] of [`Holds::module`] is `K`'s PTX entry, compiled from the
/// signature `K` was made from.
#[diagnostic::on_unimplemented(
    message = "the module `{Self}` has no kernel `{K}`",
    label = "this module's kernels are those of its kernel crate"
)]
pub unsafe trait Holds<K: KernelType> {
    /// `K`'s position in the module ([`Module::kernel_at`]).
    const INDEX: usize;
    /// The loaded module.
    fn module(&self) -> &Module;
}

/// The host arguments of the kernel `K`, as a tuple: one per kernel parameter, in order.
pub type Args<'a, K> = <<K as KernelType>::Params as HostParams>::Args<'a>;

/// How one kernel parameter marker is passed from the host.
pub trait HostParam {
    /// The host argument.
    type Arg<'a>
    where
        Self: 'a;
    /// Pushes `arg` onto `launch` as the parameter `name`.
    fn push<'a>(launch: &mut KernelLaunch<'a>, name: &'static str, arg: Self::Arg<'a>);
}

impl<T: DeviceCopy> HostParam for Slice<T> {
    type Arg<'a> = &'a DeviceBuffer<T>;
    #[inline]
    fn push<'a>(launch: &mut KernelLaunch<'a>, name: &'static str, arg: Self::Arg<'a>) {
        launch.input(name, arg);
    }
}

impl<T: DeviceCopy> HostParam for Output<T> {
    type Arg<'a> = &'a mut DeviceBuffer<T>;
    #[inline]
    fn push<'a>(launch: &mut KernelLaunch<'a>, name: &'static str, arg: Self::Arg<'a>) {
        launch.output(name, arg);
    }
}

impl<T: DeviceCopy> HostParam for Value<T> {
    type Arg<'a> = T;
    #[inline]
    fn push<'a>(launch: &mut KernelLaunch<'a>, name: &'static str, arg: Self::Arg<'a>) {
        launch.value(name, &arg);
    }
}

/// A kernel's parameter list (a tuple of [`HostParam`] markers) and its host arguments.
pub trait HostParams {
    /// The host arguments, as a tuple.
    type Args<'a>
    where
        Self: 'a;
    /// Pushes `args` onto `launch` in order, named by `names`.
    fn push_all<'a>(launch: &mut KernelLaunch<'a>, names: &[&'static str], args: Self::Args<'a>);
}

macro_rules! host_params {
    ($($p:ident $a:ident $i:tt),*) => {
        impl<$($p: HostParam),*> HostParams for ($($p,)*) {
            type Args<'a> = ($($p::Arg<'a>,)*) where Self: 'a;
            #[allow(unused_variables)]
            #[inline]
            fn push_all<'a>(
                launch: &mut KernelLaunch<'a>,
                names: &[&'static str],
                ($($a,)*): Self::Args<'a>,
            ) {
                $( $p::push(launch, names.get($i).copied().unwrap_or("?"), $a); )*
            }
        }
    };
}

host_params!();
host_params!(A a 0);
host_params!(A a 0, B b 1);
host_params!(A a 0, B b 1, C c 2);
host_params!(A a 0, B b 1, C c 2, D d 3);
host_params!(A a 0, B b 1, C c 2, D d 3, E e 4);
host_params!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5);
host_params!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6);
host_params!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7);
host_params!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8);
host_params!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9);
host_params!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10);
host_params!(
    A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10, L l 11
);
host_params!(
    A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10, L l 11,
    M m 12
);
host_params!(
    A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10, L l 11,
    M m 12, N n 13
);
host_params!(
    A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10, L l 11,
    M m 12, N n 13, O o 14
);
host_params!(
    A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10, L l 11,
    M m 12, N n 13, O o 14, P p 15
);

/// Launches the kernel `K` of `module` on `stream` (what the generated `launch::<K>` calls).
///
/// The configuration is checked against the device's and the kernel's limits first, and the
/// buffers against the launch's device; on error nothing is launched.
pub fn launch<'a, K, M>(
    module: &'a M,
    stream: &'a Stream,
    config: LaunchConfig,
    args: Args<'a, K>,
) -> Result<()>
where
    K: KernelType<Safety = Safe>,
    K::Params: HostParams,
    M: Holds<K>,
{
    // SAFETY: `K` is a safe kernel: it has no contract beyond its parameter types.
    unsafe { launch_unsafe::<K, M>(module, stream, config, args) }
}

/// [`launch`] for a kernel that may be an `unsafe fn` (what the generated `launch_unsafe::<K>`
/// calls).
///
/// # Safety
/// The caller upholds the kernel's safety contract (its documentation's `# Safety`).
pub unsafe fn launch_unsafe<'a, K, M>(
    module: &'a M,
    stream: &'a Stream,
    config: LaunchConfig,
    args: Args<'a, K>,
) -> Result<()>
where
    K: KernelType,
    K::Params: HostParams,
    M: Holds<K>,
{
    let kernel = module.module().kernel_at(M::INDEX)?;
    debug_assert_eq!(
        kernel.name(),
        K::NAME,
        "`Holds::INDEX` names another kernel"
    );
    let mut launch = kernel.prepare(stream, config)?;
    K::Params::push_all(&mut launch, K::PARAM_NAMES, args);
    // A launch small enough for the kernel's 32-bit index variant runs that: the same code with
    // 32-bit index arithmetic (`gpu_abi::index32`). It takes the same parameters.
    // (It shares the kernel's code unit, loaded by now; were it not to load, the kernel runs.)
    if let Some(variant) = module.module().index32_variant(M::INDEX)
        && launch.fits_index32()
        && let Ok(variant) = module.module().kernel_at(variant)
    {
        launch.retarget(variant);
    }
    // SAFETY: the arguments were pushed by `K::Params`, which `#[kernel]` built from the
    // signature of the entry at `M::INDEX` (the `KernelType` and `Holds` contracts): their order,
    // count and types are the PTX entry's. The kernel's own contract is the caller's.
    unsafe { launch.launch() }
}
