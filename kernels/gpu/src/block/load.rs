//! Moving a tile between global memory and registers.
//!
//! Loads take a `&[T]` (the kernel's input) and are safe: a full-tile load panics if the tile
//! does not fit (one check per thread, not per item), a `_partial` load fills the items past the
//! end with a given value. Stores write through a [`DisjointSlice`] and are `unsafe`: the caller
//! promises that no other thread (of this or another block) writes the same tile.
//!
//! Blocked loads and stores use 16-byte vector instructions (`ld.global.nc.v4`, `st.global.v4`)
//! when the tile's run per thread is a multiple of 16 bytes and the address is 16-byte aligned
//! (device buffers are); otherwise element by element. Loads go through the read-only data
//! path (`.nc`): a kernel's `&[T]` inputs are not written while it runs.

#![cfg_attr(not(target_arch = "nvptx64"), allow(unused_variables))]

use core::mem::{MaybeUninit, size_of};

use crate::DeviceCopy;
use crate::slice::DisjointSlice;
use crate::thread::{block_size, local_index};

/// Whether a run of `N` values at `p` can move as whole 16-byte vectors.
#[inline(always)]
fn vectorizable<T, const N: usize>(p: *const T) -> bool {
    (N * size_of::<T>()).is_multiple_of(16) && (p as usize).is_multiple_of(16)
}

/// One 16-byte load through the read-only (non-coherent) data path.
///
/// # Safety
/// `p` must be a 16-aligned global address of 16 readable bytes not written during the kernel.
#[inline(always)]
pub(crate) unsafe fn load_v4(p: *const u8) -> [u32; 4] {
    device!("block::load", {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: the caller guarantees `p` is readable, aligned and read-only meanwhile.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [g]; }}",
                p = in(reg64) p, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                options(pure, readonly, nostack),
            )
        };
        [a, b, c, d]
    }, sim: { // SAFETY: as on the GPU: the caller guarantees 16 readable bytes at `p`.
        unsafe { p.cast::<[u32; 4]>().read_unaligned() } })
}

/// One 16-byte store.
///
/// # Safety
/// `p` must be a 16-aligned global address of 16 writable bytes no other thread accesses.
#[inline(always)]
pub(crate) unsafe fn store_v4(p: *mut u8, v: [u32; 4]) {
    device!("block::store", {
        // SAFETY: the caller guarantees `p` is writable, aligned and exclusive.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; st.global.v4.u32 [g], {{{a}, {b}, {c}, {d}}}; }}",
                p = in(reg64) p, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
                options(nostack),
            )
        };
    }, sim: { // SAFETY: as on the GPU: the caller guarantees 16 writable bytes at `p`.
        unsafe { p.cast::<[u32; 4]>().write_unaligned(v) } })
}

/// Reads `N` consecutive values from `p`.
///
/// # Safety
/// `p..p+N` must be readable global memory not written during the kernel.
#[inline(always)]
unsafe fn read_run<T: DeviceCopy, const N: usize>(p: *const T) -> [T; N] {
    if vectorizable::<T, N>(p) {
        let mut out = MaybeUninit::<[T; N]>::uninit();
        let dst = out.as_mut_ptr().cast::<[u32; 4]>();
        for c in 0..N * size_of::<T>() / 16 {
            // SAFETY: chunk `c` lies inside the run (a whole number of 16-byte chunks), `p` is
            // 16-aligned; `dst` has room for every chunk and `[T; N]` is at least 4-aligned or
            // written bytewise-equivalent (unaligned write).
            unsafe {
                dst.add(c)
                    .write_unaligned(load_v4(p.cast::<u8>().add(16 * c)))
            };
        }
        // SAFETY: every byte was written; any bit pattern is a valid `T` (DeviceCopy).
        unsafe { out.assume_init() }
    } else {
        // SAFETY: the caller guarantees the N values are readable.
        core::array::from_fn(|i| unsafe { p.add(i).read() })
    }
}

/// Writes `N` consecutive values to `p`.
///
/// # Safety
/// `p..p+N` must be writable global memory that no other thread accesses meanwhile.
#[inline(always)]
unsafe fn write_run<T: DeviceCopy, const N: usize>(p: *mut T, items: [T; N]) {
    if vectorizable::<T, N>(p) {
        let src = (&raw const items).cast::<[u32; 4]>();
        for c in 0..N * size_of::<T>() / 16 {
            // SAFETY: as in `read_run`; `items` has no padding (DeviceCopy) so its bytes are
            // initialized, and the caller guarantees exclusive access to the destination.
            unsafe { store_v4(p.cast::<u8>().add(16 * c), src.add(c).read_unaligned()) };
        }
    } else {
        for (i, item) in items.into_iter().enumerate() {
            // SAFETY: the caller guarantees exclusive access to the run.
            unsafe { p.add(i).write(item) };
        }
    }
}

#[cold]
#[cfg_attr(not(panic = "immediate-abort"), inline(never))]
#[track_caller]
fn tile_out_of_bounds() -> ! {
    panic!("block load/store: the tile does not fit in the slice (use the _partial form)")
}

#[inline(always)]
#[track_caller]
fn check_full_tile<const N: usize>(len: usize, tile_start: usize) {
    let tile = block_size() as usize * N;
    if tile_start.checked_add(tile).is_none_or(|end| end > len) {
        tile_out_of_bounds();
    }
}

/// Blocked load of a full tile starting at `tile_start`: thread `t` gets
/// `src[tile_start + t·N ..][..N]`. Panics if the tile (`block_size · N` items) does not fit.
#[inline(always)]
#[track_caller]
pub fn load_blocked<T: DeviceCopy, const N: usize>(src: &[T], tile_start: usize) -> [T; N] {
    check_full_tile::<N>(src.len(), tile_start);
    let first = tile_start + local_index() as usize * N;
    // SAFETY: the whole tile is in bounds (checked above); `&[T]` is not written meanwhile.
    unsafe { read_run(src.as_ptr().add(first)) }
}

/// This thread's own run `src[start..][..N]`, with 16-byte vector loads where the run is a
/// whole number of aligned 16-byte chunks (as [`load_blocked`]), for runs not laid out by the
/// thread index (say, rows of one layout read while writing another). Panics if the run does
/// not fit.
#[inline(always)]
#[track_caller]
pub fn load_run<T: DeviceCopy, const N: usize>(src: &[T], start: usize) -> [T; N] {
    if start.checked_add(N).is_none_or(|end| end > src.len()) {
        tile_out_of_bounds();
    }
    // SAFETY: the run is in bounds (checked above); `&[T]` is not written meanwhile.
    unsafe { read_run(src.as_ptr().add(start)) }
}

/// Blocked load of a possibly partial tile: items at or past `src.len()` are `fill`.
#[inline(always)]
pub fn load_blocked_partial<T: DeviceCopy, const N: usize>(
    src: &[T],
    tile_start: usize,
    fill: T,
) -> [T; N] {
    let first = tile_start.saturating_add(local_index() as usize * N);
    if first.saturating_add(N) <= src.len() {
        // SAFETY: `first..first + N` is in bounds.
        unsafe { read_run(src.as_ptr().add(first)) }
    } else {
        core::array::from_fn(|i| match first.checked_add(i) {
            Some(j) if j < src.len() => src[j],
            _ => fill,
        })
    }
}

/// Load of a full tile for order-insensitive use (commutative reductions, histograms): every
/// load instruction of a warp reads 512 consecutive bytes (thread `t` takes 16-byte chunks
/// `t, t + B, t + 2B, …` of the tile), the fastest pattern for DRAM; the items a thread gets are
/// neither blocked nor striped. Falls back to [`load_striped`] when the tile is not 16-byte
/// aligned or `T` does not divide 16 bytes. Panics if the tile does not fit.
#[inline(always)]
#[track_caller]
pub fn load_unordered<T: DeviceCopy, const N: usize>(src: &[T], tile_start: usize) -> [T; N] {
    check_full_tile::<N>(src.len(), tile_start);
    let size = size_of::<T>();
    // SAFETY: the tile is in bounds (checked above), so its first element is too.
    let base = unsafe { src.as_ptr().add(tile_start) };
    if size == 0 || 16 % size != 0 || !vectorizable::<T, N>(base) {
        return load_striped(src, tile_start);
    }
    let (t, b) = (local_index() as usize, block_size() as usize);
    let mut out = MaybeUninit::<[T; N]>::uninit();
    let dst = out.as_mut_ptr().cast::<[u32; 4]>();
    for c in 0..N * size / 16 {
        // SAFETY: chunk `c·B + t` < N·size/16 · B, inside the checked, 16-aligned tile;
        // `dst` has room for every chunk.
        unsafe {
            dst.add(c)
                .write_unaligned(load_v4(base.cast::<u8>().add(16 * (c * b + t))))
        };
    }
    // SAFETY: every byte was written; any bit pattern is a valid `T` (DeviceCopy).
    unsafe { out.assume_init() }
}

/// Striped load of a full tile: thread `t` gets `src[tile_start + t + i·block_size]` for
/// `i in 0..N` (each load instruction of a warp reads 32 consecutive values). Panics if the
/// tile does not fit.
#[inline(always)]
#[track_caller]
pub fn load_striped<T: DeviceCopy, const N: usize>(src: &[T], tile_start: usize) -> [T; N] {
    check_full_tile::<N>(src.len(), tile_start);
    let (t, b) = (local_index() as usize, block_size() as usize);
    let base = src.as_ptr();
    // SAFETY: every index is inside the checked tile.
    core::array::from_fn(|i| unsafe { base.add(tile_start + t + i * b).read() })
}

/// Striped load of a possibly partial tile: items at or past `src.len()` are `fill`.
#[inline(always)]
pub fn load_striped_partial<T: DeviceCopy, const N: usize>(
    src: &[T],
    tile_start: usize,
    fill: T,
) -> [T; N] {
    let (t, b) = (local_index() as usize, block_size() as usize);
    core::array::from_fn(|i| match src.get(tile_start + t + i * b) {
        Some(&v) => v,
        None => fill,
    })
}

/// Blocked store of a full tile: thread `t` writes `dst[tile_start + t·N ..][..N]`. Panics if
/// the tile does not fit.
///
/// # Safety
/// No other thread, of this block or another, may access the tile's elements of `dst` during
/// the kernel (blocks must store disjoint tiles).
#[inline(always)]
#[track_caller]
pub unsafe fn store_blocked<T: DeviceCopy, const N: usize>(
    dst: &DisjointSlice<'_, T>,
    tile_start: usize,
    items: [T; N],
) {
    check_full_tile::<N>(dst.len(), tile_start);
    let first = tile_start + local_index() as usize * N;
    // SAFETY: in bounds (checked); exclusive per the caller's promise and distinct per thread.
    unsafe { write_run(dst.as_mut_ptr().add(first), items) }
}

/// This thread's own run `dst[start..][..N]` (the inverse of [`load_run`]). Panics if the run
/// does not fit.
///
/// # Safety
/// No other thread, of this block or another, may access the run's elements of `dst` during
/// the kernel.
#[inline(always)]
#[track_caller]
pub unsafe fn store_run<T: DeviceCopy, const N: usize>(
    dst: &DisjointSlice<'_, T>,
    start: usize,
    items: [T; N],
) {
    if start.checked_add(N).is_none_or(|end| end > dst.len()) {
        tile_out_of_bounds();
    }
    // SAFETY: in bounds (checked); exclusive per the caller's promise.
    unsafe { write_run(dst.as_mut_ptr().add(start), items) }
}

/// Blocked store of a possibly partial tile: items that would land at or past `dst.len()` are
/// dropped.
///
/// # Safety
/// As for [`store_blocked`].
#[inline(always)]
pub unsafe fn store_blocked_partial<T: DeviceCopy, const N: usize>(
    dst: &DisjointSlice<'_, T>,
    tile_start: usize,
    items: [T; N],
) {
    let first = tile_start.saturating_add(local_index() as usize * N);
    let p = dst.as_mut_ptr();
    if first.saturating_add(N) <= dst.len() {
        // SAFETY: in bounds; exclusive per the caller's promise.
        unsafe { write_run(p.add(first), items) }
    } else {
        for (i, item) in items.into_iter().enumerate() {
            if first + i < dst.len() {
                // SAFETY: in bounds; exclusive per the caller's promise.
                unsafe { p.add(first + i).write(item) };
            }
        }
    }
}

/// Striped store of a full tile (the inverse of [`load_striped`]). Panics if the tile does not
/// fit.
///
/// # Safety
/// As for [`store_blocked`].
#[inline(always)]
#[track_caller]
pub unsafe fn store_striped<T: DeviceCopy, const N: usize>(
    dst: &DisjointSlice<'_, T>,
    tile_start: usize,
    items: [T; N],
) {
    check_full_tile::<N>(dst.len(), tile_start);
    let (t, b) = (local_index() as usize, block_size() as usize);
    let p = dst.as_mut_ptr();
    for (i, item) in items.into_iter().enumerate() {
        // SAFETY: in bounds (checked); exclusive per the caller's promise.
        unsafe { p.add(tile_start + t + i * b).write(item) };
    }
}

/// Striped store of a possibly partial tile: items past `dst.len()` are dropped.
///
/// # Safety
/// As for [`store_blocked`].
#[inline(always)]
pub unsafe fn store_striped_partial<T: DeviceCopy, const N: usize>(
    dst: &DisjointSlice<'_, T>,
    tile_start: usize,
    items: [T; N],
) {
    let (t, b) = (local_index() as usize, block_size() as usize);
    let p = dst.as_mut_ptr();
    for (i, item) in items.into_iter().enumerate() {
        let j = tile_start + t + i * b;
        if j < dst.len() {
            // SAFETY: in bounds; exclusive per the caller's promise.
            unsafe { p.add(j).write(item) };
        }
    }
}

// The host build of the vector accesses needs the simulator (`cargo test --workspace` enables it).
#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;

    /// A thread's own run round-trips at an aligned start (16-byte vectors) and at an odd one
    /// (element by element).
    #[test]
    fn runs_load_and_store_at_any_start() {
        #[repr(align(16))]
        struct Aligned([u16; 40]);
        let src = Aligned(core::array::from_fn(|i| i as u16));
        assert_eq!(
            load_run::<u16, 8>(&src.0, 8),
            core::array::from_fn(|i| 8 + i as u16)
        );
        assert_eq!(
            load_run::<u16, 8>(&src.0, 3),
            core::array::from_fn(|i| 3 + i as u16)
        );

        let mut dst = Aligned([0; 40]);
        // SAFETY: `dst` outlives the slice and nothing else touches it.
        let out = unsafe { DisjointSlice::__from_raw(dst.0.as_mut_ptr(), dst.0.len()) };
        // SAFETY: one thread writes disjoint runs.
        unsafe {
            store_run(&out, 16, [7u16; 8]);
            store_run(&out, 5, [9u16; 3]);
        }
        assert!(dst.0[16..24].iter().all(|&v| v == 7) && dst.0[5..8].iter().all(|&v| v == 9));
        assert_eq!(dst.0.iter().filter(|&&v| v != 0).count(), 11);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_run_past_the_end_panics() {
        let src = [0u16; 40];
        let _ = load_run::<u16, 8>(&src, 33);
    }
}
