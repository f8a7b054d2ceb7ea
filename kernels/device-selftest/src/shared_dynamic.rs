//! Dynamic shared memory: size from the launch, typed views, splitting, aliasing, atomics, and a
//! static array in the same kernel.

use gpu::prelude::*;

/// What one thread read back from dynamic shared memory.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, DeviceCopy)]
pub struct DynamicRecord {
    pub c_neighbor: u64,
    pub size: u32,
    pub len_f32: u32,
    pub len_a: u32,
    pub len_b: u32,
    pub len_c: u32,
    pub a_neighbor: f32,
    pub alias_bits: u32,
    pub atomic_sum: f32,
    pub static_neighbor: u32,
    pub aligned: u32,
}

/// Launch: 1 block × 64 threads, **1024 bytes of dynamic shared memory**; `records.len() == 64`.
///
/// Expected for thread `l`, with `n = (l + 1) % 64`: `c_neighbor = n * 1_000_000_007`,
/// `size = 1024`, `len_f32 = 256`, `len_a = 64`, `len_b = 192`, `len_c = 64`,
/// `a_neighbor = n + 0.5`, `alias_bits = (n as f32 + 0.5).to_bits()`, `atomic_sum = 64.0`,
/// `static_neighbor = n * 11`, `aligned = 1`.
#[kernel]
pub fn selftest_shared_dynamic(mut records: DisjointSlice<DynamicRecord>) {
    let l = thread::local_index() as usize;
    let n = (l + 1) % 64;

    let all = shared::dynamic::<f32>(); // bytes 0..1024 as 256 f32
    let (a, b) = all.split_at(64); // a: bytes 0..256, b: bytes 256..1024
    let c = shared::dynamic_at::<u64>(512, 64); // bytes 512..1024 (overlaps b's upper half)
    let st = shared_array!(u32, 64);

    a.write(l, l as f32 + 0.5);
    c.write(l, l as u64 * 1_000_000_007);
    st.write(l, l as u32 * 11);
    if l == 0 {
        b.write(36, 0.0); // element 100 of `all`, bytes 400..404: not in `c`
    }
    sync_threads();
    b.atomic_add(36, 1.0);
    sync_threads();

    let words = shared::dynamic::<u32>();
    let record = DynamicRecord {
        c_neighbor: c.read(n),
        size: shared::dynamic_size_bytes(),
        len_f32: all.len() as u32,
        len_a: a.len() as u32,
        len_b: b.len() as u32,
        len_c: c.len() as u32,
        a_neighbor: a.read(n),
        alias_bits: words.read(n),
        atomic_sum: all.read(100),
        static_neighbor: st.read(n),
        aligned: (all.addr().is_multiple_of(16)
            && c.addr() == all.addr() + 512
            && st.addr() != all.addr()) as u32,
    };
    records.set(thread::global_index(), record);
}
