//! `shared_array!` in both syntaxes, every access width, unchecked/volatile/pointer access,
//! cooperative fill, split views.

use gpu::prelude::*;

/// What one thread read back from static shared arrays (values written by its neighbour).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, DeviceCopy)]
pub struct SharedRecord {
    pub u64_neighbor: u64,
    pub v4_neighbor: [u32; 4],
    pub f3_neighbor: [f32; 3],
    pub f32_neighbor: f32,
    pub u16_neighbor: u32,
    pub u8_neighbor: u32,
    pub b6_first: u32,
    pub b6_last: u32,
    pub unchecked: u32,
    pub volatile: u32,
    pub via_ptr: u32,
    pub filled: u32,
    pub split: u32,
    pub split_lens: u32,
    pub helper_same: u32,
    pub aligned: u32,
}

/// A device function with its own static shared array: every call (in any kernel) sees the
/// same array, like CUDA's `__shared__` in a `__device__` function.
#[inline(never)]
fn scratch() -> SharedArray<u32, 64> {
    shared_array!(u32, 64)
}

const HALF: usize = 32;

/// Launch: 1 block × 64 threads; `records.len() == 64`.
///
/// Expected for thread `l`, with `n = (l + 1) % 64`: `u64_neighbor = (n << 35) | n`,
/// `v4_neighbor = [n, n + 1, n + 2, n + 3]`, `f3_neighbor = [n, -n, 0.25]`,
/// `f32_neighbor = n * 1.5`, `u16_neighbor = (n * 500) as u16`, `u8_neighbor = (n * 3) as u8`,
/// `b6_first = n`, `b6_last = n + 5`, `unchecked = n ^ 0xABCD`, `volatile = n + 99`,
/// `via_ptr = n * 7`, `filled = 0xF00D`, `split = (40 + n % 24) ^ 0xABCD`,
/// `split_lens = 40024`, `helper_same = 1`, `aligned = 1`.
#[kernel]
pub fn selftest_shared_static(mut records: DisjointSlice<SharedRecord>) {
    let l = thread::local_index() as usize;
    let n = (l + 1) % 64;

    let a = shared_array!(u8, 64);
    let b = shared_array!([u16; 64]);
    let c = shared_array!(f32, 64);
    let d = shared_array!(u64, 64);
    let e = shared_array!([u32; 4], 64);
    let f = shared_array!([f32; 3], 64);
    let g = shared_array!([u8; 6], 64);
    let h = shared_array!(u32, HALF * 2);
    let v = shared_array!(u32, 64);
    let p = shared_array!(u32, 64);
    let fill = shared_array!(u32, 64 * 3);

    a.write(l, (l * 3) as u8);
    b.write(l, (l * 500) as u16);
    c.write(l, l as f32 * 1.5);
    d.write(l, ((l as u64) << 35) | l as u64);
    let l32 = l as u32;
    e.write(l, [l32, l32 + 1, l32 + 2, l32 + 3]);
    f.write(l, [l as f32, -(l as f32), 0.25]);
    let l8 = l as u8;
    g.write(l, [l8, l8 + 1, l8 + 2, l8 + 3, l8 + 4, l8 + 5]);
    // SAFETY: l < 64 == h.len().
    unsafe { h.write_unchecked(l, l32 ^ 0xABCD) };
    v.write_volatile(l, l32 + 99);
    // SAFETY: element l of `p` is in bounds and written only by this thread before the barrier.
    unsafe { p.as_ptr().add(l).write(l32 * 7) };
    fill.block_fill(0xF00D);
    sync_threads();

    let b6 = g.read(n);
    // SAFETY: n < 64 == h.len().
    let unchecked = unsafe { h.read_unchecked(n) };
    let (lo, hi) = h.as_slice().split_at(40);
    let addrs = [
        a.addr(),
        b.addr(),
        c.addr(),
        d.addr(),
        e.addr(),
        f.addr(),
        g.addr(),
        h.addr(),
        p.addr(),
    ];
    let record = SharedRecord {
        u64_neighbor: d.read(n),
        v4_neighbor: e.read(n),
        f3_neighbor: f.read(n),
        f32_neighbor: c.read(n),
        u16_neighbor: b.read(n) as u32,
        u8_neighbor: a.read(n) as u32,
        b6_first: b6[0] as u32,
        b6_last: b6[5] as u32,
        unchecked,
        volatile: v.read_volatile(n),
        via_ptr: p.read(n),
        filled: if fill.read(l) == 0xF00D && fill.read(191 - l) == 0xF00D {
            0xF00D
        } else {
            0
        },
        split: hi.read(n % 24),
        split_lens: (lo.len() * 1000 + hi.len()) as u32,
        helper_same: (scratch().addr() == scratch().addr() && scratch().addr() != h.addr()) as u32,
        aligned: addrs.iter().all(|addr| addr.is_multiple_of(16)) as u32,
    };
    records.set(thread::global_index(), record);
}
