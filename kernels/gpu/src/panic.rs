//! The kernel panic handler: report the panic to the host, then stop the kernel.
//!
//! A panic in a kernel (`panic!`, a failed `assert!`, an out-of-bounds slice index, an
//! arithmetic overflow check) ends the whole launch with `trap`, which leaves the CUDA context
//! unusable ("sticky" error). So that the host can still say *what* went wrong, the first
//! panicking thread first writes a fixed-layout **panic record** into page-locked host memory
//! that the host mapped into the device's address space (`cuMemHostAlloc` with `DEVICEMAP`):
//! host memory stays readable after the context is poisoned, where device memory is not.
//!
//! The host finds the record through the module global [`__gpu_panic_record`]: when `gpu_host`
//! loads a module it looks that symbol up (`cuModuleGetGlobal`) and stores the record's device
//! address in it. A module loaded some other way keeps a null pointer, and a panic then only
//! traps.
//!
//! Protocol (the host's side is `gpu_host`'s `fault` module; the record's layout and constants
//! are `gpu_abi::panic`, shared by both):
//! - One thread wins a device-scope CAS on [`PANIC_CLAIM`] (0 → 1) and writes the record; every
//!   other panicking thread waits (bounded) until the winner sets the claim to 2, so that no
//!   `trap` ends the launch while the record is half written.
//! - The winner writes every field, then `fence.sc.sys`, then the `magic` word, then
//!   `fence.sc.sys` again; the host trusts a record only when `magic` is [`RECORD_MAGIC`].
//! - Strings are copied (the host cannot read device memory after the fault), truncated to the
//!   record's buffers; the full lengths are recorded so the host can say "truncated".
//! - With the `panic-report` feature, the source location is copied and the message too: as is
//!   when it is a plain string (`panic!("text")`, `assert!(cond)`, `assert!(cond, "text")`),
//!   formatted with `core::fmt` into a 256-byte local buffer otherwise (`panic!("{x}")`, slice
//!   index errors).
//!
//! # Why location and message are opt-in (register cost, measured)
//! Reading the `PanicInfo` at all keeps core's panic-message formatting functions alive as
//! function pointers inside every kernel that can panic (a bounds check is enough), and ptxas
//! then sizes each such kernel for them: measured with ptxas 13.0 for sm_90, `vector_add` went
//! from 12 to 50 registers per thread (and `selftest_atomics_global` from 48 registers to 50
//! with spills). Without the feature the record holds the block, thread and launch shape only;
//! that path needs at most 32 registers, which on sm_80/sm_90 (65536 registers for 2048
//! threads per SM) costs no occupancy. So the default is the cheap record, and a crate being
//! debugged (or whose panics are expected, like the `faults` test crate) enables
//! `gpu = { ..., features = ["panic-report"] }` in its `Cargo.toml`.
//!
//! Kernel name: the device cannot tell which entry point it is running, so the record holds the
//! grid and block shapes instead; the host matches them against the launches it has in flight.

// The record layout is a protocol shared with the host; not every constant is used by both
// feature configurations.
#![allow(dead_code)]

use core::panic::PanicInfo;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicU32, Ordering};

// The record's layout and constants are the ABI crate's: the host reads the same type. Which
// flags are used depends on the `panic-report` feature.
#[allow(unused_imports)]
use gpu_abi::panic::{
    FILE_CAP, FLAG_FORMATTED, FLAG_LOCATION, FLAG_MESSAGE, FLAG_NO_DETAILS, MESSAGE_CAP,
    PanicRecord, RECORD_MAGIC, RECORD_VERSION,
};

/// Device address of the host-mapped panic record, set by the host at module load; null when
/// the host did not set one. Its name is `gpu_abi::panic::RECORD_SYMBOL`.
#[unsafe(no_mangle)]
#[used]
pub static mut __gpu_panic_record: *mut PanicRecord = core::ptr::null_mut();

/// 0: no panic yet; 1: a thread is writing the record; 2: the record is written.
static PANIC_CLAIM: AtomicU32 = AtomicU32::new(0);

/// How long a losing thread waits for the winner's record, in rounds of about 1 µs.
const WAIT_ROUNDS: u32 = 100_000;

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    report(info);
    // SAFETY: `trap` has no preconditions; it ends the kernel.
    unsafe { core::arch::nvptx::trap() }
}

/// Writes the panic record (first panicking thread only). Kept out of line and cold so the
/// kernels' hot paths only see a call.
#[cold]
#[inline(never)]
fn report(info: &PanicInfo<'_>) {
    // SAFETY: the pointer is written by the host before any launch of this module and never
    // changed while kernels run; a volatile read of a plain word is always valid.
    let record = unsafe { addr_of_mut!(__gpu_panic_record).read_volatile() };
    if record.is_null() {
        return;
    }
    if PANIC_CLAIM
        .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        // Another thread writes the record: let it finish before this thread's trap ends the
        // launch (bounded, in case the winner itself cannot progress).
        let mut rounds = 0;
        while PANIC_CLAIM.load(Ordering::Relaxed) != 2 && rounds < WAIT_ROUNDS {
            crate::time::nanosleep(1000);
            rounds += 1;
        }
        return;
    }
    #[cfg(feature = "panic-report")]
    let mut buf = MessageBuf::new();
    #[cfg(feature = "panic-report")]
    let d = details(info, &mut buf);
    #[cfg(not(feature = "panic-report"))]
    let d = {
        let _ = info;
        Details {
            file: "",
            line: 0,
            column: 0,
            flags: FLAG_NO_DETAILS,
            message: &[],
            message_len: 0,
        }
    };
    let b = crate::thread::block_idx();
    let t = crate::thread::thread_idx();
    let g = crate::thread::grid_dim();
    let bd = crate::thread::block_dim();
    // SAFETY: `record` is the device address of a `PanicRecord` in host-mapped memory that the
    // host keeps allocated while the module is loaded; this thread holds the claim, so it is the
    // only writer. Volatile writes: the host reads this memory, the compiler must not elide them.
    unsafe {
        let r = record;
        let w32 = |p: *mut u32, v: u32| p.write_volatile(v);
        w32(addr_of_mut!((*r).version), RECORD_VERSION);
        w32(addr_of_mut!((*r).line), d.line);
        w32(addr_of_mut!((*r).column), d.column);
        for (i, v) in [b.x, b.y, b.z].into_iter().enumerate() {
            w32(addr_of_mut!((*r).block_idx[i]), v);
        }
        for (i, v) in [t.x, t.y, t.z].into_iter().enumerate() {
            w32(addr_of_mut!((*r).thread_idx[i]), v);
        }
        for (i, v) in [g.x, g.y, g.z].into_iter().enumerate() {
            w32(addr_of_mut!((*r).grid_dim[i]), v);
        }
        for (i, v) in [bd.x, bd.y, bd.z].into_iter().enumerate() {
            w32(addr_of_mut!((*r).block_dim[i]), v);
        }
        w32(addr_of_mut!((*r).file_len), d.file.len() as u32);
        w32(addr_of_mut!((*r).message_len), d.message_len as u32);
        w32(addr_of_mut!((*r).flags), d.flags);
        let file_dst = addr_of_mut!((*r).file).cast::<u8>();
        for (i, &byte) in d.file.as_bytes().iter().take(FILE_CAP).enumerate() {
            file_dst.add(i).write_volatile(byte);
        }
        let msg_dst = addr_of_mut!((*r).message).cast::<u8>();
        for (i, &byte) in d.message.iter().take(MESSAGE_CAP).enumerate() {
            msg_dst.add(i).write_volatile(byte);
        }
        crate::sync::fence_system();
        w32(addr_of_mut!((*r).magic), RECORD_MAGIC);
        crate::sync::fence_system();
    }
    PANIC_CLAIM.store(2, Ordering::Relaxed);
}

/// What the record says about the panic besides the thread that hit it.
struct Details<'a> {
    file: &'a str,
    line: u32,
    column: u32,
    flags: u32,
    /// The (possibly truncated) message bytes.
    message: &'a [u8],
    /// The message's full length in bytes.
    message_len: usize,
}

/// Location and message of the panic, with the `flags` saying what was found.
#[cfg(feature = "panic-report")]
#[inline(always)]
fn details<'a>(info: &'a PanicInfo<'_>, buf: &'a mut MessageBuf) -> Details<'a> {
    use core::fmt::Write as _;
    let mut flags = 0;
    let msg = info.message();
    if let Some(text) = msg.as_str() {
        if !text.is_empty() {
            flags |= FLAG_MESSAGE;
            buf.push_str(text);
        }
    } else {
        flags |= FLAG_MESSAGE | FLAG_FORMATTED;
        let _ = write!(buf, "{msg}");
    }
    let (file, line, column) = match info.location() {
        Some(loc) => {
            flags |= FLAG_LOCATION;
            (loc.file(), loc.line(), loc.column())
        }
        None => ("", 0, 0),
    };
    Details {
        file,
        line,
        column,
        flags,
        message_len: buf.full_len,
        message: buf.bytes(),
    }
}

/// A fixed buffer that keeps the first `MESSAGE_CAP` bytes written and counts the rest.
#[cfg(feature = "panic-report")]
struct MessageBuf {
    bytes: [u8; MESSAGE_CAP],
    len: usize,
    full_len: usize,
}

#[cfg(feature = "panic-report")]
impl MessageBuf {
    fn new() -> Self {
        MessageBuf {
            bytes: [0; MESSAGE_CAP],
            len: 0,
            full_len: 0,
        }
    }

    fn push_str(&mut self, s: &str) {
        let take = s.len().min(MESSAGE_CAP - self.len);
        self.bytes[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        self.full_len += s.len();
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(feature = "panic-report")]
impl core::fmt::Write for MessageBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}
