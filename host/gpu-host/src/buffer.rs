//! Device memory holding `len` values of a [`DeviceCopy`] type.
//!
//! cudarc's allocation and copy functions require its own `DeviceRepr` trait, which users cannot
//! implement for their types here (orphan rule) and which says nothing about padding. So a
//! [`DeviceBuffer<T>`] stores untyped bytes (`CudaSlice<u8>`) and views host `[T]` as bytes, which
//! is sound because `DeviceCopy` types are padding-free plain data. Each buffer carries a
//! [`BufferUses`]: which streams have queued work on it, so that a use on another stream first
//! waits for the conflicting ones, and the free waits for all of them (see `buffer_uses`).

use std::alloc::Layout;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, align_of, size_of};
use std::ops::Range;
use std::ptr::NonNull;

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DriverError, sys};
use gpu::DeviceCopy;

use crate::buffer_uses::BufferUses;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::stream::Stream;

/// `len` values of `T` in device memory, allocated on (and freed in order with) one stream.
///
/// A zero-length buffer owns no device memory (the driver refuses 0-byte allocations); kernels
/// receive a null pointer and length 0 for it, which `gpu`'s slice rebuilding accepts.
///
/// # Lifetime of the memory
/// Dropping a buffer never frees memory that queued work still uses: the free is *stream
/// ordered* (`cuMemFreeAsync` on the buffer's stream, after that stream waits for the
/// buffer's queued reads and writes on any other stream), so it happens on the device after
/// every kernel and copy submitted before the drop. Launches borrow their buffers (`&` for
/// inputs, `&mut` for outputs) only while the launch is built: after `launch` returns the
/// buffer may be dropped or reused by the host at once, and reads ([`DeviceBuffer::to_vec`])
/// wait for the writes queued before them.
///
/// # On the simulator
/// The memory is a zeroed host allocation aligned to [`SIM_ALIGN`] bytes, [`DeviceBuffer::device_ptr`]
/// is its address, and copies are synchronous `memcpy`s.
pub struct DeviceBuffer<T: DeviceCopy> {
    /// `None` exactly when the buffer holds zero bytes. Not dropped when stale: after a device
    /// reset the address may belong to a newer allocation.
    bytes: ManuallyDrop<Option<Bytes>>,
    len: usize,
    stream: Stream,
    /// Memory lent by its owner ([`Stream::borrow_external`]): never freed here.
    borrowed: bool,
    _marker: PhantomData<T>,
}

/// Alignment of the simulator's buffers, as `cuMemAlloc` guarantees on a GPU.
pub const SIM_ALIGN: usize = 256;

/// A buffer's memory: a cudarc allocation, or the simulator's host memory.
pub(crate) enum Bytes {
    Cuda(CudaBytes),
    Host(HostBytes),
}

/// Device memory and the streams that use it.
pub(crate) struct CudaBytes {
    /// Allocated without cudarc's per-buffer events (`gpu-host` turns them off): its
    /// `device_ptr` guards do nothing, and ordering is `uses`'.
    pub(crate) slice: CudaSlice<u8>,
    pub(crate) uses: BufferUses,
    /// The device address (what kernels receive).
    pub(crate) addr: sys::CUdeviceptr,
}

impl CudaBytes {
    /// `slice`, allocated or written by work queued on `stream`.
    fn new(slice: CudaSlice<u8>, stream: &Arc<CudaStream>) -> CudaBytes {
        let (addr, _) = cudarc::driver::DevicePtr::device_ptr(&slice, stream);
        CudaBytes {
            addr,
            uses: BufferUses::new(stream),
            slice,
        }
    }
}

impl Bytes {
    fn len(&self) -> usize {
        match self {
            Bytes::Cuda(b) => b.slice.len(),
            Bytes::Host(h) => h.len,
        }
    }
}

/// Zeroed host memory of `len > 0` bytes aligned to [`SIM_ALIGN`], owned; or, in a borrowed
/// buffer ([`Stream::borrow_external`]), someone else's memory, which is never dropped.
pub(crate) struct HostBytes {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `HostBytes` owns its allocation like a `Box<[u8]>`; access goes through `&`/`&mut`
// of the owning buffer (and simulated kernels, which run while the launch borrows it).
unsafe impl Send for HostBytes {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for HostBytes {}

impl HostBytes {
    fn layout(len: usize) -> Option<Layout> {
        Layout::from_size_align(len, SIM_ALIGN).ok()
    }

    /// Allocates `len > 0` zeroed bytes; `None` when the host has no memory for them.
    fn zeroed(len: usize) -> Option<HostBytes> {
        let layout = HostBytes::layout(len)?;
        // SAFETY: `len > 0` (callers never ask for 0 bytes), so the layout is not zero-sized.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).map(|ptr| HostBytes { ptr, len })
    }

    /// The memory's address (what kernels receive as the pointer).
    pub(crate) fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialized (zeroed at allocation) bytes owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for HostBytes {
    fn drop(&mut self) {
        if let Some(layout) = HostBytes::layout(self.len) {
            // SAFETY: allocated in `zeroed` with this same layout, freed once.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

/// Allocates `n > 0` zeroed bytes of simulator memory, or says why not.
fn host_alloc(n: usize, what: String) -> Result<HostBytes> {
    HostBytes::zeroed(n).ok_or_else(|| {
        let (free, total) = crate::device::host_memory().unwrap_or((0, 0));
        Error::OutOfMemory {
            context: format!("{what} (on the CPU simulator, in host memory)"),
            requested: n,
            free,
            total,
        }
    })
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("stale", &self.stream.epoch().is_stale())
            .finish()
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.borrowed {
            // The owner frees the memory: give the handle back without freeing it.
            // SAFETY: taken once, here; `bytes` is not used afterwards.
            match unsafe { ManuallyDrop::take(&mut self.bytes) } {
                // The owner orders its free after its own stream: work queued through the
                // buffer on other streams must be waited for there. `leak` gives the address
                // back instead of freeing it.
                Some(Bytes::Cuda(b)) if !self.stream.epoch().is_stale() => {
                    let _ = self.drain_uses(&b);
                    b.slice.leak();
                }
                Some(Bytes::Cuda(b)) => std::mem::forget(b.slice),
                Some(Bytes::Host(host)) => std::mem::forget(host),
                None => {}
            }
            return;
        }
        if !self.stream.epoch().is_stale() {
            if let Some(Bytes::Cuda(b)) = &*self.bytes {
                // Best effort: a failure is a sticky device error, which every later call on
                // the device reports; the free below is then moot.
                let _ = self.drain_uses(b);
            }
            // SAFETY: dropped once, here; `bytes` is not used afterwards.
            unsafe { ManuallyDrop::drop(&mut self.bytes) };
        }
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Makes the buffer's own stream wait for the work queued through `b` on other streams, so
    /// that the free (or the owner's reuse) queued there comes after it.
    fn drain_uses(&self, b: &CudaBytes) -> std::result::Result<(), DriverError> {
        match self.stream.cuda_stream() {
            Some(s) => b.uses.before_write(s),
            None => Ok(()),
        }
    }
}

/// The error for a failed allocation of `bytes`: [`Error::OutOfMemory`] with the device's free
/// and total memory when the driver ran out, the device's fault for sticky errors, else
/// [`Error::Driver`].
fn alloc_error(stream: &Stream, bytes: usize, what: String) -> impl FnOnce(DriverError) -> Error {
    move |source| {
        if source.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let (free, total) = stream
                .cuda_stream()
                .and_then(|s| s.context().mem_get_info().ok())
                .unwrap_or((0, 0));
            Error::OutOfMemory {
                context: what,
                requested: bytes,
                free,
                total,
            }
        } else {
            stream.epoch().driver(|| what)(source)
        }
    }
}

/// A buffer lent to foreign work on a stream ([`DeviceBuffer::use_on`]): its address, valid
/// while the buffer stays borrowed.
pub struct BufferUse<'a> {
    ptr: sys::CUdeviceptr,
    _buffer: PhantomData<&'a ()>,
}

impl BufferUse<'_> {
    /// The device address (0 for an empty buffer; on the simulator a host address).
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

/// Copies `bytes` bytes from `src` (a buffer of another device, whose work is queued on
/// `src_stream`) into `dst`, on `dst_stream`; see [`DeviceBuffer::copy_from_device`].
/// Where a peer copy reads and writes, in bytes.
struct PeerCopy {
    dst_offset: usize,
    src_offset: usize,
    bytes: usize,
}

fn peer_copy(
    dst_stream: &Arc<CudaStream>,
    dst: &mut CudaBytes,
    src_stream: &Arc<CudaStream>,
    src: &CudaBytes,
    copy: PeerCopy,
) -> std::result::Result<(), DriverError> {
    dst_stream.context().bind_to_thread()?;
    // The copy is a read of `src` and a write of `dst` queued on `dst_stream`: it waits for the
    // source's queued writes (on its device), and the source's later writes and its free wait
    // for it (events work across devices).
    src.uses.before_read(dst_stream)?;
    dst.uses.before_write(dst_stream)?;
    // SAFETY: both ranges lie inside live allocations (the caller checked the offsets and
    // `bytes` against both lengths), owned by their contexts, which the handles keep alive; the
    // copy is ordered with both buffers' other uses above.
    unsafe {
        sys::cuMemcpyPeerAsync(
            dst.addr + copy.dst_offset as u64,
            dst_stream.context().cu_ctx(),
            src.addr + copy.src_offset as u64,
            src_stream.context().cu_ctx(),
            copy.bytes,
            dst_stream.cu_stream(),
        )
        .result()
    }
}

/// `len * size_of::<T>()`, or an error naming `operation` when it overflows.
fn byte_len<T>(len: usize, operation: &str) -> Result<usize> {
    len.checked_mul(size_of::<T>())
        .ok_or_else(|| Error::SizeOverflow {
            context: format!(
                "{operation}: {len} elements of {} ({} bytes each)",
                std::any::type_name::<T>(),
                size_of::<T>()
            ),
        })
}

/// Views plain data as its bytes.
fn as_bytes<T: DeviceCopy>(values: &[T]) -> &[u8] {
    // SAFETY: `DeviceCopy` types have no padding, so all `size_of_val(values)` bytes are
    // initialized; `u8` has alignment 1 and the length is exactly the slice's size in bytes; the
    // returned slice borrows `values`, so the memory stays valid and unaliased by writers.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }
}

/// Views plain data as its bytes, for writing.
fn as_bytes_mut<T: DeviceCopy>(values: &mut [T]) -> &mut [u8] {
    let n = size_of_val(values);
    // SAFETY: as in `as_bytes`; in addition any bytes written through the view form a valid `T`,
    // because `DeviceCopy` types are plain numeric data for which every bit pattern is valid
    // (the trait's contract). The exclusive borrow of `values` makes the view the only access.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), n) }
}

impl Stream {
    /// Allocates `len` zeroed values of `T` on this stream.
    ///
    /// All-zero bytes are a valid value of every `DeviceCopy` type (plain numeric data).
    pub fn alloc_zeroed<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.alloc_with(len, true, "alloc_zeroed")
    }

    /// Allocates `len` values of `T` on this stream without setting them, for buffers a kernel
    /// writes in full before anything reads them (scratch space): it saves
    /// [`alloc_zeroed`](Self::alloc_zeroed)'s memset. On a GPU the values are whatever the
    /// memory held before; on the simulator they are zeros. Every bit pattern is a valid
    /// `DeviceCopy` value, so reading an unset element is not undefined behaviour, only
    /// meaningless.
    pub fn alloc_uninit<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.alloc_with(len, false, "alloc_uninit")
    }

    /// [`alloc_zeroed`](Self::alloc_zeroed) (`zeroed`) or [`alloc_uninit`](Self::alloc_uninit),
    /// `api` naming the caller in errors.
    fn alloc_with<T: DeviceCopy>(
        &self,
        len: usize,
        zeroed: bool,
        api: &str,
    ) -> Result<DeviceBuffer<T>> {
        let n = byte_len::<T>(len, api)?;
        let what = || {
            format!(
                "allocating {n} bytes of device memory ({len} x {})",
                std::any::type_name::<T>()
            )
        };
        self.check(what)?;
        let bytes = match self.cuda_stream() {
            _ if n == 0 => None,
            Some(stream) => {
                let slice = if zeroed {
                    stream.alloc_zeros::<u8>(n)
                } else {
                    // SAFETY: the bytes are unset, and every bit pattern is a valid `u8` (and,
                    // `DeviceCopy`'s contract, a valid `T`), so no read of them is undefined.
                    unsafe { stream.alloc::<u8>(n) }
                };
                Some(Bytes::Cuda(CudaBytes::new(
                    slice.map_err(alloc_error(self, n, what()))?,
                    stream,
                )))
            }
            None => Some(Bytes::Host(host_alloc(n, what())?)),
        };
        Ok(DeviceBuffer {
            bytes: ManuallyDrop::new(bytes),
            len,
            stream: self.clone(),
            borrowed: false,
            _marker: PhantomData,
        })
    }

    /// Allocates a buffer on this stream and copies `data` into it.
    ///
    /// The copy is ordered on this stream; `data` may be reused as soon as this returns (the
    /// driver stages pageable host memory before returning).
    pub fn to_device<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let src = as_bytes(data);
        let what = || {
            format!(
                "uploading {} bytes to the device ({} x {})",
                src.len(),
                data.len(),
                std::any::type_name::<T>()
            )
        };
        self.check(what)?;
        let bytes = match self.cuda_stream() {
            _ if src.is_empty() => None,
            Some(stream) => Some(Bytes::Cuda(CudaBytes::new(
                stream
                    .clone_htod(src)
                    .map_err(alloc_error(self, src.len(), what()))?,
                stream,
            ))),
            None => {
                let mut host = host_alloc(src.len(), what())?;
                host.as_mut_slice().copy_from_slice(src);
                Some(Bytes::Host(host))
            }
        };
        Ok(DeviceBuffer {
            bytes: ManuallyDrop::new(bytes),
            len: data.len(),
            stream: self.clone(),
            borrowed: false,
            _marker: PhantomData,
        })
    }

    /// `len` values of `T` at `ptr` in memory that something else allocated and owns (a torch
    /// tensor, a CuPy array; on the simulator a NumPy array's host memory), as a buffer of this
    /// stream's device: no copy, and dropping the buffer frees nothing. Its copies and its
    /// uses by launches are ordered on this stream like an owned buffer's.
    ///
    /// This is how foreign arrays reach kernels zero-copy (the Python bindings pass torch's
    /// current stream as `self`, so the work orders with torch's own). Errors (nothing
    /// borrowed): a stale or poisoned stream, a null `ptr` with `len > 0`, a `ptr` not aligned
    /// for `T`, or a byte size that overflows.
    ///
    /// # Safety
    /// - `ptr` is the address of `len` initialized values of `T` in memory this stream's device
    ///   accesses: device memory of its context (e.g. the primary context torch also uses) on a
    ///   GPU, host memory on the simulator.
    /// - The memory stays allocated and is not reused until the buffer is dropped *and* the
    ///   work queued through it has finished. Owners that free in order on this stream (torch's
    ///   caching allocator for its current stream) satisfy the second part.
    /// - While work queued through the buffer runs, no one else writes the memory, and no other
    ///   buffer over overlapping memory is written by the same work.
    pub unsafe fn borrow_external<T: DeviceCopy>(
        &self,
        ptr: u64,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let n = byte_len::<T>(len, "borrow_external")?;
        let what = || {
            format!(
                "borrowing {n} bytes at {ptr:#x} ({len} x {})",
                std::any::type_name::<T>()
            )
        };
        self.check(what)?;
        if n > 0 && (ptr == 0 || !ptr.is_multiple_of(align_of::<T>() as u64)) {
            return Err(Error::Unsupported {
                what: format!(
                    "{}: the address must be non-null and aligned to {} bytes",
                    what(),
                    align_of::<T>()
                ),
            });
        }
        if ptr.checked_add(n as u64).is_none() {
            return Err(Error::SizeOverflow { context: what() });
        }
        let bytes = match self.cuda_stream() {
            _ if n == 0 => None,
            // SAFETY: the caller guarantees `n` bytes at `ptr` in this stream's context that
            // outlive the slice; the slice is never freed (`leak` in `Drop`).
            Some(stream) => Some(Bytes::Cuda(CudaBytes::new(
                unsafe { stream.upgrade_device_ptr::<u8>(ptr, n) },
                stream,
            ))),
            None => Some(Bytes::Host(HostBytes {
                // `ptr` is non-null (checked above).
                ptr: NonNull::new(ptr as *mut u8).expect("checked non-null"),
                len: n,
            })),
        };
        Ok(DeviceBuffer {
            bytes: ManuallyDrop::new(bytes),
            len,
            stream: self.clone(),
            borrowed: true,
            _marker: PhantomData,
        })
    }
}

impl Gpu {
    /// Allocates `len` zeroed values of `T` on the default stream.
    pub fn alloc_zeroed<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.default_stream().alloc_zeroed(len)
    }

    /// Allocates a buffer on the default stream and copies `data` into it.
    pub fn to_device<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        self.default_stream().to_device(data)
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes (`len * size_of::<T>()`).
    pub fn size_bytes(&self) -> usize {
        self.bytes.as_ref().map_or(0, |b| b.len())
    }

    /// The stream this buffer was allocated on. Copies through the buffer's own methods run on
    /// it, and the memory is freed in order on it when the buffer is dropped.
    #[inline]
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Copies the buffer to a new `Vec`, waiting for all earlier work that writes it.
    ///
    /// The copy runs on the buffer's stream, which first waits for writes queued on other
    /// streams, and this blocks until the copy has completed.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out: Vec<T> = Vec::with_capacity(self.len);
        // SAFETY: the capacity is `self.len` elements; zero bytes are a valid `T` (plain numeric
        // `DeviceCopy` data), so after the memset all `self.len` elements are initialized.
        unsafe {
            std::ptr::write_bytes(out.as_mut_ptr(), 0, self.len);
            out.set_len(self.len);
        }
        self.copy_to_host(&mut out)?;
        Ok(out)
    }

    /// Copies the buffer into `dst`, which must have exactly `len()` elements, and blocks until
    /// the copy has completed (so `dst` holds the data when this returns).
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        if dst.len() != self.len {
            return Err(Error::SizeMismatch {
                operation: "DeviceBuffer::copy_to_host".to_string(),
                expected: self.len,
                actual: dst.len(),
            });
        }
        let what = || {
            format!(
                "copying {} bytes from the device to the host",
                self.size_bytes()
            )
        };
        self.stream.check(what)?;
        let (stream, src) = match (self.stream.cuda_stream(), &*self.bytes) {
            (_, None) => return Ok(()),
            (_, Some(Bytes::Host(h))) => {
                as_bytes_mut(dst).copy_from_slice(h.as_slice());
                return Ok(());
            }
            (Some(stream), Some(Bytes::Cuda(src))) => (stream, src),
            (None, Some(Bytes::Cuda(_))) => unreachable!("a CUDA buffer on a simulator stream"),
        };
        src.uses
            .before_read(stream)
            .and_then(|()| stream.memcpy_dtoh(&src.slice, as_bytes_mut(dst)))
            .map_err(self.stream.epoch().driver(what))?;
        self.stream.synchronize()
    }

    /// Overwrites the buffer with `src`, which must have exactly `len()` elements.
    ///
    /// Ordered on the buffer's stream after earlier reads and writes of the buffer; `src` may be
    /// reused as soon as this returns.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        if src.len() != self.len {
            return Err(Error::SizeMismatch {
                operation: "DeviceBuffer::copy_from_host".to_string(),
                expected: self.len,
                actual: src.len(),
            });
        }
        let n = self.size_bytes();
        let what = || format!("copying {n} bytes from the host to the device");
        self.stream.check(what)?;
        let epoch = self.stream.epoch().clone();
        match (self.stream.cuda_stream(), &mut *self.bytes) {
            (_, None) => Ok(()),
            (_, Some(Bytes::Host(h))) => {
                h.as_mut_slice().copy_from_slice(as_bytes(src));
                Ok(())
            }
            (Some(stream), Some(Bytes::Cuda(dst))) => dst
                .uses
                .before_write(stream)
                .and_then(|()| stream.memcpy_htod(as_bytes(src), &mut dst.slice))
                .map_err(epoch.driver(what)),
            (None, Some(Bytes::Cuda(_))) => unreachable!("a CUDA buffer on a simulator stream"),
        }
    }

    /// Overwrites the buffer with the contents of `src` (same length), device to device, ordered
    /// on this buffer's stream.
    ///
    /// `src` may live on another device. Then the copy is a peer copy (`cuMemcpyPeerAsync`):
    /// direct over NVLink or PCIe when the two devices can access each other's memory
    /// ([`crate::Gpu::can_access_peer`]; enabling it with [`crate::Gpu::enable_peer_access`]
    /// makes it the fast path), staged through host memory by the driver otherwise; the call is
    /// the same either way. Ordering across the two devices: the copy waits for the work queued
    /// on `src`'s stream before the call, and work queued on `src`'s stream after the call waits
    /// for the copy (so `src` may be overwritten or dropped at once).
    pub fn copy_from_device(&mut self, src: &DeviceBuffer<T>) -> Result<()> {
        if src.len != self.len {
            return Err(Error::SizeMismatch {
                operation: "DeviceBuffer::copy_from_device".to_string(),
                expected: self.len,
                actual: src.len,
            });
        }
        self.copy_range_from_device(0, src, 0..src.len)
    }

    /// Copies `src[range]` over `self[at .. at + range.len()]`, device to device, with the
    /// ordering and cross-device behaviour of [`DeviceBuffer::copy_from_device`]. Errors
    /// (nothing copied): a range outside `src`, or a destination that ends past `self`.
    pub fn copy_range_from_device(
        &mut self,
        at: usize,
        src: &DeviceBuffer<T>,
        range: Range<usize>,
    ) -> Result<()> {
        if range.start > range.end || range.end > src.len {
            return Err(Error::SizeMismatch {
                operation: format!(
                    "DeviceBuffer::copy_range_from_device: source range {range:?} (the end must \
                     be within the source's length)"
                ),
                expected: range.end,
                actual: src.len,
            });
        }
        if at.checked_add(range.len()).is_none_or(|end| end > self.len) {
            return Err(Error::SizeMismatch {
                operation: format!(
                    "DeviceBuffer::copy_range_from_device: {} element(s) written at {at} (the \
                     destination's length must reach their end)",
                    range.len()
                ),
                expected: at.saturating_add(range.len()),
                actual: self.len,
            });
        }
        let size = size_of::<T>();
        let n = range.len() * size;
        let (dst_off, src_off) = (at * size, range.start * size);
        let (to, from) = (self.stream.device_key(), src.stream.device_key());
        let what = || {
            if to == from {
                format!("copying {n} bytes from device to device")
            } else {
                format!("copying {n} bytes from {from} to {to}")
            }
        };
        self.stream.check(what)?;
        src.stream
            .check(|| format!("{} (the source buffer)", what()))?;
        if n == 0 {
            return Ok(());
        }
        let epoch = self.stream.epoch().clone();
        match (self.stream.cuda_stream(), &mut *self.bytes, &*src.bytes) {
            (_, None, _) | (_, _, None) => Ok(()),
            (_, Some(Bytes::Host(dst)), Some(Bytes::Host(from))) => {
                dst.as_mut_slice()[dst_off..dst_off + n]
                    .copy_from_slice(&from.as_slice()[src_off..src_off + n]);
                Ok(())
            }
            (Some(stream), Some(Bytes::Cuda(dst)), Some(Bytes::Cuda(src_bytes))) if to == from => {
                let ordered = src_bytes.uses.before_read(stream);
                let ordered = ordered.and_then(|()| dst.uses.before_write(stream));
                let from = src_bytes.slice.slice(src_off..src_off + n);
                let mut into = dst.slice.slice_mut(dst_off..dst_off + n);
                ordered
                    .and_then(|()| stream.memcpy_dtod(&from, &mut into))
                    .map_err(epoch.driver(what))
            }
            (Some(stream), Some(Bytes::Cuda(dst)), Some(Bytes::Cuda(from_bytes))) => {
                let Some(src_stream) = src.stream.cuda_stream() else {
                    unreachable!("a CUDA buffer on a simulator stream")
                };
                let copy = PeerCopy {
                    dst_offset: dst_off,
                    src_offset: src_off,
                    bytes: n,
                };
                peer_copy(stream, dst, src_stream, from_bytes, copy).map_err(epoch.driver(what))
            }
            _ => Err(Error::DeviceMismatch {
                context: format!(
                    "{}: one is on the CPU simulator, the other on a GPU",
                    what()
                ),
            }),
        }
    }

    /// The same memory as a buffer of `U` (no copy): `size_bytes() / size_of::<U>()` elements,
    /// e.g. `Vec4`s as 4× as many `f32`s for a library that moves plain scalars. Sound for any
    /// two [`DeviceCopy`] types, whose every bit pattern is a value. Errors (the buffer is
    /// dropped): a byte size that is not a multiple of `U`'s size, a zero-sized `U`, or a `U`
    /// aligned to more than [`SIM_ALIGN`] (the alignment every allocation has).
    pub fn cast<U: DeviceCopy>(mut self) -> Result<DeviceBuffer<U>> {
        let (bytes, unit) = (self.size_bytes(), size_of::<U>());
        if unit == 0 || bytes % unit != 0 || align_of::<U>() > SIM_ALIGN {
            return Err(Error::SizeMismatch {
                operation: format!(
                    "DeviceBuffer::cast: {bytes} bytes of {} as {} ({unit} bytes, aligned to {})",
                    std::any::type_name::<T>(),
                    std::any::type_name::<U>(),
                    align_of::<U>()
                ),
                expected: bytes.div_ceil(unit.max(1)) * unit,
                actual: bytes,
            });
        }
        let memory = std::mem::take(&mut *self.bytes);
        Ok(DeviceBuffer {
            bytes: ManuallyDrop::new(memory),
            len: bytes / unit,
            stream: self.stream.clone(),
            borrowed: self.borrowed,
            _marker: PhantomData,
        })
    }

    /// ESCAPE HATCH for libraries that queue their own device work (NCCL, cuBLAS): the buffer's
    /// address for work that only reads it, queued on `stream` while the returned guard lives.
    ///
    /// Orders that work like a launch: it starts after the writes queued before (on any
    /// stream), and later writes (on any stream) and the buffer's free wait for it. `stream`
    /// must belong to the buffer's device ([`Error::DeviceMismatch`] otherwise). On the
    /// simulator the address is the host memory's and the work must be done before the guard
    /// drops.
    pub fn use_on<'a>(&'a self, stream: &'a Stream) -> Result<BufferUse<'a>> {
        self.lend(stream, false)
    }

    /// [`DeviceBuffer::use_on`] for work that writes the buffer: it also starts after the
    /// reads queued before.
    pub fn use_mut_on<'a>(&'a mut self, stream: &'a Stream) -> Result<BufferUse<'a>> {
        self.lend(stream, true)
    }

    /// [`DeviceBuffer::use_on`] (`write`: [`DeviceBuffer::use_mut_on`], whose `&mut` makes the
    /// write exclusive).
    fn lend<'a>(&'a self, stream: &'a Stream, write: bool) -> Result<BufferUse<'a>> {
        let what = self.prepare_use(stream)?;
        let ptr = match (&*self.bytes, stream.cuda_stream()) {
            (None, _) => 0,
            (Some(Bytes::Host(h)), _) => h.addr(),
            (Some(Bytes::Cuda(b)), Some(s)) => {
                let ordered = if write {
                    b.uses.before_write(s)
                } else {
                    b.uses.before_read(s)
                };
                ordered.map_err(self.stream.epoch().driver(what))?;
                b.addr
            }
            (Some(Bytes::Cuda(_)), None) => unreachable!("a CUDA buffer on a simulator stream"),
        };
        Ok(BufferUse {
            ptr,
            _buffer: PhantomData,
        })
    }

    /// Checks that `stream` may use the buffer; returns the description for errors.
    fn prepare_use(&self, stream: &Stream) -> Result<impl Fn() -> String + use<T>> {
        let bytes = self.size_bytes();
        let what = move || format!("lending a {bytes}-byte buffer to work on a stream");
        self.stream.check(what)?;
        stream.check(what)?;
        let (own, other) = (self.stream.device_key(), stream.device_key());
        if own != other {
            return Err(Error::DeviceMismatch {
                context: format!("{}: the buffer is on {own}, the stream on {other}", what()),
            });
        }
        Ok(what)
    }

    /// RAW ESCAPE HATCH: the buffer's device address (0 for an empty buffer); on the simulator
    /// the host address of its memory.
    ///
    /// Getting the number is harmless; using it is not: work submitted through it bypasses the
    /// ordering of this buffer's uses across streams (see [`DeviceBuffer::use_on`], which does
    /// not), so the caller must synchronize by hand and must not use the address after the
    /// buffer is dropped.
    pub fn device_ptr(&self) -> sys::CUdeviceptr {
        match &*self.bytes {
            None => 0,
            Some(Bytes::Host(h)) => h.addr(),
            Some(Bytes::Cuda(b)) => b.addr,
        }
    }

    /// RAW ESCAPE HATCH: the underlying cudarc allocation, for interop with cudarc; `None` for
    /// an empty buffer and on the simulator. It carries no cudarc events (`gpu-host` orders
    /// buffers itself): work queued through it on another stream than the buffer's must be
    /// synchronized by hand, as with [`DeviceBuffer::device_ptr`].
    pub fn as_cuda_slice(&self) -> Option<&CudaSlice<u8>> {
        match &*self.bytes {
            Some(Bytes::Cuda(b)) => Some(&b.slice),
            _ => None,
        }
    }

    /// Whether [`crate::Gpu::recover`] reset the device since this buffer was made: its memory
    /// is gone, and every use returns [`Error::Stale`].
    #[inline]
    pub fn is_stale(&self) -> bool {
        self.stream.epoch().is_stale()
    }

    /// Whether the memory is lent by its owner ([`Stream::borrow_external`]) rather than owned.
    pub fn is_borrowed(&self) -> bool {
        self.borrowed
    }

    #[inline]
    pub(crate) fn bytes(&self) -> Option<&Bytes> {
        self.bytes.as_ref()
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> Option<&mut Bytes> {
        self.bytes.as_mut()
    }
}

#[cfg(test)]
mod tests {
    use crate::Gpu;

    #[test]
    fn borrowed_memory_is_read_and_written_in_place_and_never_freed() {
        let gpu = Gpu::simulator().unwrap();
        let s = gpu.default_stream();
        let mut host = vec![1.0f32, 2.0, 3.0, 4.0];
        let ptr = host.as_mut_ptr() as u64;
        // SAFETY: `host` holds 4 f32s, outlives the buffer and is not touched meanwhile.
        let mut b = unsafe { s.borrow_external::<f32>(ptr, 4) }.unwrap();
        assert!(b.is_borrowed());
        assert_eq!(b.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
        b.copy_from_host(&[5.0, 6.0, 7.0, 8.0]).unwrap();
        let words = b.cast::<u32>().unwrap();
        assert!(words.is_borrowed());
        drop(words);
        // The memory is still the Vec's, now holding what was written through the buffer.
        assert_eq!(host, [5.0, 6.0, 7.0, 8.0]);
    }

    #[test]
    fn borrowing_refuses_null_and_misaligned_addresses() {
        let gpu = Gpu::simulator().unwrap();
        let s = gpu.default_stream();
        let host = [0u64; 2];
        let ptr = host.as_ptr() as u64;
        // SAFETY: refused before anything is read (the address is misaligned).
        let err = unsafe { s.borrow_external::<u64>(ptr + 4, 1) }.unwrap_err();
        assert!(err.to_string().contains("aligned to 8"), "{err}");
        // SAFETY: refused (null with a non-zero length).
        assert!(unsafe { s.borrow_external::<u64>(0, 1) }.is_err());
        // SAFETY: an empty borrow reads nothing.
        let empty = unsafe { s.borrow_external::<u64>(0, 0) }.unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn the_simulator_has_no_streams_to_borrow() {
        let gpu = Gpu::simulator().unwrap();
        // SAFETY: refused on the simulator before the handle is used.
        let err = unsafe { gpu.borrow_stream(0) }.unwrap_err();
        assert!(err.to_string().contains("no CUDA streams"), "{err}");
    }
}
