//! The kernel panic record: what the first panicking thread writes for the host.
//!
//! The device (`gpu`'s panic handler) writes it into page-locked host memory mapped into the
//! device; the host (`gpu_host`'s fault module) reads it after the launch fails. The protocol
//! (claim, fences, magic written last) is described in `gpu`'s `panic` module; this is the
//! layout both sides agree on.

/// `"GPNC"`: written last; a record is complete exactly when its first word is this.
pub const RECORD_MAGIC: u32 = 0x434e_5047;
/// Layout version of [`PanicRecord`].
pub const RECORD_VERSION: u32 = 1;
/// Bytes of the source file path kept.
pub const FILE_CAP: usize = 176;
/// Bytes of the panic message kept.
pub const MESSAGE_CAP: usize = 256;
/// The module global holding the record's device address: the host stores it there at module
/// load (`cuModuleGetGlobal`), the device's panic handler reads it.
pub const RECORD_SYMBOL: &str = "__gpu_panic_record";

/// `flags` bit: the panic had a source location.
pub const FLAG_LOCATION: u32 = 1;
/// `flags` bit: the panic had a message.
pub const FLAG_MESSAGE: u32 = 2;
/// `flags` bit: the message was formatted on the device (it had arguments).
pub const FLAG_FORMATTED: u32 = 4;
/// `flags` bit: built without the `panic-report` feature, so location and message were not
/// recorded.
pub const FLAG_NO_DETAILS: u32 = 8;

/// The record the first panicking thread writes into host-mapped memory (512 bytes, all
/// little-endian words then byte buffers).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PanicRecord {
    pub magic: u32,
    pub version: u32,
    pub line: u32,
    pub column: u32,
    pub block_idx: [u32; 3],
    pub thread_idx: [u32; 3],
    pub grid_dim: [u32; 3],
    pub block_dim: [u32; 3],
    /// Full length of the file path in bytes (the first `min(file_len, FILE_CAP)` are copied).
    pub file_len: u32,
    /// Full length of the message in bytes (the first `min(message_len, MESSAGE_CAP)` are
    /// copied; a formatted message longer than the buffer counts as `MESSAGE_CAP + 1`).
    pub message_len: u32,
    pub flags: u32,
    pub reserved: u32,
    pub file: [u8; FILE_CAP],
    pub message: [u8; MESSAGE_CAP],
}

const _: () = assert!(core::mem::size_of::<PanicRecord>() == 512);
const _: () = assert!(core::mem::offset_of!(PanicRecord, block_idx) == 16);
const _: () = assert!(core::mem::offset_of!(PanicRecord, block_dim) == 52);
const _: () = assert!(core::mem::offset_of!(PanicRecord, file_len) == 64);
const _: () = assert!(core::mem::offset_of!(PanicRecord, file) == 80);
const _: () = assert!(core::mem::offset_of!(PanicRecord, message) == 256);

impl PanicRecord {
    /// A record with nothing written (`magic` 0: not complete).
    pub const EMPTY: PanicRecord = PanicRecord {
        magic: 0,
        version: 0,
        line: 0,
        column: 0,
        block_idx: [0; 3],
        thread_idx: [0; 3],
        grid_dim: [0; 3],
        block_dim: [0; 3],
        file_len: 0,
        message_len: 0,
        flags: 0,
        reserved: 0,
        file: [0; FILE_CAP],
        message: [0; MESSAGE_CAP],
    };
}
