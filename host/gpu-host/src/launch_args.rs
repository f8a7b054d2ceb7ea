//! The argument list of one launch being built: one entry per PTX parameter, and the array of
//! pointers to the parameters' values that `cuLaunchKernel` takes.
//!
//! A launch of a small kernel costs the driver a few microseconds, so the list is built without
//! allocating: its storage (three vectors) is recycled through a per-thread spare, kept when a
//! list is dropped and taken by the next one, and every value the driver reads lives in that
//! storage or in the buffers themselves (a buffer parameter points at the buffer's own device
//! address).
//!
//! # Safety model
//! [`Param::Read`] and [`Param::Write`] hold raw pointers to the pushed buffers' memory records.
//! The list itself does not keep those alive: its owner ([`crate::launch::KernelLaunch`]) holds
//! the borrows (shared for reads, exclusive for writes) for as long as the list exists, which is
//! what makes dereferencing them sound.

use std::cell::Cell;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::buffer::CudaBytes;

/// The largest kernel parameter list CUDA accepts (Volta and later, CUDA 12.1 and later).
pub(crate) const MAX_PARAM_BYTES: usize = 32_764;

/// Zero bytes kept after the last by-value parameter: when a kernel's PTX signature could not be
/// read (so pushed sizes are unchecked), a driver reading a little past a short value reads
/// zeros inside the list's storage.
const TAIL_CHUNKS: usize = 4;

/// Storage above this many bytes of by-value parameters is freed rather than recycled.
const RECYCLE_BYTES: usize = 4096;

/// Sixteen bytes of by-value parameter storage; values start on a chunk, so they are 16-byte
/// aligned.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u8; 16]);

/// One pushed kernel parameter (one PTX `.param`).
#[derive(Clone, Copy)]
pub(crate) enum Param {
    /// A device pointer to memory the kernel reads (the owner borrows it shared).
    Read(NonNull<CudaBytes>),
    /// A device pointer to memory the kernel writes (the owner borrows it exclusively).
    Write(NonNull<CudaBytes>),
    /// A 64-bit word: a slice length, the null pointer of an empty buffer, or the address of a
    /// simulator buffer.
    Word(u64),
    /// A by-value parameter: its bytes start at chunk `at` of the list's byte storage.
    Bytes { at: u32 },
}

/// What a parameter is to its argument (for error messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A buffer's device pointer.
    Pointer,
    /// A buffer's length in elements.
    Length,
    /// A by-value argument.
    Value,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::Pointer => "pointer",
            Role::Length => "length",
            Role::Value => "value",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One pushed parameter, with the argument it came from and its size (for error messages and
/// the signature check). One vector of these, rather than one per field, so a push checks one
/// capacity.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) param: Param,
    /// The argument's name.
    pub(crate) name: &'static str,
    /// Size in bytes (at most [`MAX_PARAM_BYTES`]).
    pub(crate) size: u32,
    pub(crate) role: Role,
}

#[derive(Default)]
struct Storage {
    entries: Vec<Entry>,
    bytes: Vec<Chunk>,
    pointers: Vec<*mut c_void>,
}

thread_local! {
    /// The storage of the last list dropped on this thread, for the next one.
    static SPARE: Cell<Option<Box<Storage>>> = const { Cell::new(None) };
}

/// The parameters of one launch, in PTX order. One pointer wide, so a launch being built
/// moves cheaply.
pub(crate) struct ArgList(ManuallyDrop<Box<Storage>>);

impl ArgList {
    /// An empty list with room for `n` parameters (recycled storage when this thread has some).
    #[inline]
    pub(crate) fn with_capacity(n: usize) -> ArgList {
        let mut s = SPARE
            .try_with(Cell::take)
            .ok()
            .flatten()
            .unwrap_or_default();
        s.entries.reserve(n);
        ArgList(ManuallyDrop::new(s))
    }

    #[inline]
    fn storage(&self) -> &Storage {
        &self.0
    }

    #[inline]
    fn storage_mut(&mut self) -> &mut Storage {
        &mut self.0
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.storage().entries.len()
    }

    /// The pushed parameters, in order.
    #[inline]
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.storage().entries
    }

    /// Appends a parameter that is a buffer's device pointer or a word (8 bytes).
    #[inline]
    pub(crate) fn push(&mut self, param: Param, name: &'static str, role: Role) {
        self.storage_mut().entries.push(Entry {
            param,
            name,
            size: 8,
            role,
        });
    }

    /// Appends a by-value parameter: copies `bytes` (at most [`MAX_PARAM_BYTES`], which the
    /// caller checked) into the list's storage.
    #[inline]
    pub(crate) fn push_bytes(&mut self, bytes: &[u8], name: &'static str) {
        let s = self.storage_mut();
        let at = s.bytes.len();
        let chunks = bytes.len().div_ceil(16).max(1);
        s.bytes.resize(at + chunks, Chunk([0; 16]));
        for (chunk, src) in s.bytes[at..].iter_mut().zip(bytes.chunks(16)) {
            chunk.0[..src.len()].copy_from_slice(src);
        }
        s.entries.push(Entry {
            param: Param::Bytes { at: at as u32 },
            name,
            size: bytes.len() as u32,
            role: Role::Value,
        });
    }

    /// The first `len` bytes of the by-value parameter stored at chunk `at`.
    pub(crate) fn value_bytes(&self, at: u32, len: usize) -> &[u8] {
        let chunks = &self.storage().bytes[at as usize..];
        // SAFETY: `Chunk` is 16 plain bytes with no padding, so `chunks` is
        // `16 * chunks.len()` initialized bytes; `len` was pushed as this value's size, so it is
        // within the chunks the value occupies.
        let all =
            unsafe { std::slice::from_raw_parts(chunks.as_ptr().cast::<u8>(), chunks.len() * 16) };
        &all[..len]
    }

    /// One pointer per parameter to the parameter's value, as `cuLaunchKernel` takes them: into
    /// a buffer's record for its device address, into the list for words and by-value bytes.
    ///
    /// The pointers stay valid while the list is not changed and the owner's borrows last. The
    /// driver only reads through them.
    pub(crate) fn pointers(&mut self) -> &mut [*mut c_void] {
        let Storage {
            entries,
            bytes,
            pointers,
        } = self.storage_mut();
        bytes.extend_from_slice(&[Chunk([0; 16]); TAIL_CHUNKS]);
        let base: *mut Chunk = bytes.as_mut_ptr();
        // One reservation for all (a slice's iterator knows its length), no check per pointer.
        pointers.clear();
        pointers.extend(entries.iter_mut().map(|e| match &mut e.param {
            // A buffer's device address is the `addr` field of its record.
            Param::Read(b) | Param::Write(b) => {
                // SAFETY: the owner borrows the buffer for the list's lifetime (module docs);
                // only the field's address is taken.
                unsafe { (&raw const (*b.as_ptr()).addr).cast_mut().cast() }
            }
            Param::Word(w) => (w as *mut u64).cast(),
            // SAFETY: `at` is the index of a chunk pushed into `bytes`.
            Param::Bytes { at } => unsafe { base.add(*at as usize).cast() },
        }));
        pointers
    }
}

impl Drop for ArgList {
    fn drop(&mut self) {
        // SAFETY: `drop` runs once and nothing uses the storage after it.
        let mut s = unsafe { ManuallyDrop::take(&mut self.0) };
        if s.bytes.capacity() * 16 > RECYCLE_BYTES {
            return;
        }
        s.entries.clear();
        s.bytes.clear();
        s.pointers.clear();
        // During the thread's teardown the spare may be gone; the storage is then just freed.
        let _ = SPARE.try_with(|spare| spare.set(Some(s)));
    }
}
