//! The kernel panic handler: stop the kernel.
//!
//! `trap` aborts the whole launch; the host sees `CUDA_ERROR_LAUNCH_FAILED` (or an illegal
//! instruction error) from the next synchronizing call. Reporting the panic message and location
//! to the host is future work.

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `trap` has no preconditions; it ends the kernel.
    unsafe { core::arch::nvptx::trap() }
}
