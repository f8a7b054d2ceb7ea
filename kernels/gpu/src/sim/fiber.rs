//! One simulated GPU thread as a stackful coroutine (corosensei), with its stack recycled.

use core::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::Entry;
use super::panic_capture;
use super::runtime::ThreadCtx;

/// The fiber's yielder as the intrinsics see it.
pub(crate) type ThreadYielder = Yielder<(), ()>;

pub(crate) struct Fiber {
    co: Coroutine<(), (), (), DefaultStack>,
}

/// The launch's parameter array, handed to every fiber.
#[derive(Clone, Copy)]
pub(crate) struct Params(pub *const *mut c_void);

impl Fiber {
    /// A fiber that runs `entry(params)` as the thread `ctx`. A panic inside is caught, recorded
    /// on the block (with the location the panic hook saw) and ends the fiber normally.
    pub(crate) fn new(
        stack: DefaultStack,
        ctx: *const ThreadCtx,
        entry: Entry,
        params: Params,
    ) -> Fiber {
        let co = Coroutine::with_stack(stack, move |yielder: &ThreadYielder, ()| {
            // SAFETY: the block owns `ctx` and outlives every fiber it runs (fibers are finished
            // or unwound before the block context is dropped).
            let thread = unsafe { &*ctx };
            thread.set_yielder(yielder);
            let params = params;
            // SAFETY: the caller of `sim::launch` guarantees `params` matches the kernel.
            let result = catch_unwind(AssertUnwindSafe(|| unsafe { entry(params.0) }));
            if let Err(payload) = result {
                if thread.block().is_aborting() {
                    // The runtime is tearing this fiber down (corosensei's forced unwind): let
                    // the unwind through.
                    resume_unwind(payload);
                }
                let (location, message) =
                    panic_capture::take().unwrap_or_else(|| (None, payload_text(&*payload)));
                thread.block().record_panic(thread, location, message);
            }
        });
        Fiber { co }
    }

    /// Runs the fiber until it suspends (`false`) or finishes (`true`).
    pub(crate) fn resume(&mut self) -> bool {
        matches!(self.co.resume(()), CoroutineResult::Return(()))
    }

    /// Ends the fiber (unwinding it if it is suspended) and returns its stack for reuse.
    pub(crate) fn into_stack(mut self) -> DefaultStack {
        self.co.force_unwind();
        self.co.into_stack()
    }
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> std::string::String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).into()
    } else if let Some(s) = payload.downcast_ref::<std::string::String>() {
        s.clone()
    } else {
        "panic with a non-string payload".into()
    }
}
