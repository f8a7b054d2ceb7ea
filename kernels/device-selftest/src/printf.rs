//! `gpu::printf!`: every argument kind, width/precision from arguments, `%%`, no arguments.

use gpu::prelude::*;

/// Launch: 1 block × 4 threads; `results.len() == 4`.
///
/// Expected: `results[t] = [0, 12]`: `vprintf` returns the number of arguments (0 for the
/// plain line, 12 for the full one). Each thread prints (to the host's stdout, at the next
/// synchronization), for `t` in 0..4 (`x = t + 0.5`):
/// ```text
/// printf selftest
/// t=<t> x=<x with 3 decimals> big=<(1 << 40) + t> neg=<-(t+1)> hex=0x<(0xab + t) in hex> u8=<t+200> w=[   <t>] f64=<t*0.25, 2 decimals> p=<nonzero pointer> s=hello c=A 100%
/// ```
/// e.g. for t = 0: `t=0 x=0.500 big=1099511627776 neg=-1 hex=0xab u8=200 w=[   0] f64=0.00 p=0x... s=hello c=A 100%`.
#[kernel]
pub fn selftest_printf(mut results: DisjointSlice<[i32; 2]>) {
    let g = thread::global_index();
    let t = g.get() as u32;
    let plain = printf!("printf selftest\n");
    let full = printf!(
        "t=%u x=%.3f big=%lld neg=%d hex=%#x u8=%u w=[%*u] f64=%.2f p=%p s=%s c=%c 100%%\n",
        t,
        t as f32 + 0.5,
        (1i64 << 40) + t as i64,
        -(t as i32) - 1,
        0xab + t,
        (t + 200) as u8,
        4i32,
        t,
        t as f64 * 0.25,
        results.as_mut_ptr(),
        c"hello",
        b'A' as u32,
    );
    results.set(g, [plain, full]);
}
