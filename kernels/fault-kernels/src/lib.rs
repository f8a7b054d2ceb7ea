//! Planted faults, for proving that device errors reach the host and that the tooling
//! (compute-sanitizer) catches what it should. Every faulting kernel takes a `trigger` so the
//! fault happens in one known thread (or not at all), and the tests can check the host's error
//! names that thread.
//!
//! The line numbers of the panicking statements are part of the tests' expectations
//! (`gpu-tests/tests/faults.rs` looks them up with `line!()`-free string search of this file), so
//! moving them is fine: the tests find them by their marker comments.
#![no_std]

use gpu::prelude::*;

/// Writes `value + i` to every element: a well-behaved kernel for recovery and soak tests.
#[kernel]
pub fn fill(value: u32, mut out: DisjointSlice<u32>) {
    for i in thread::grid_stride(out.len()) {
        out.set(i, value.wrapping_add(i.get() as u32));
    }
}

/// `out[i] = a[i] + b[i]` for u32: a well-behaved kernel with inputs (soak, lifetimes).
#[kernel]
pub fn add_u32(a: &[u32], b: &[u32], mut out: DisjointSlice<u32>) {
    for i in thread::grid_stride(out.len()) {
        let j = i.get();
        out.set(i, a[j].wrapping_add(b[j]));
    }
}

/// Spins for about `micros` microseconds per thread (nanosleep), then copies `src` to `out`:
/// keeps a launch in flight long enough for the buffer-lifetime tests to drop its buffers.
#[kernel]
pub fn slow_copy(micros: u32, src: &[u32], mut out: DisjointSlice<u32>) {
    let start = time::globaltimer();
    while time::globaltimer() - start < micros as u64 * 1000 {
        time::nanosleep(1000);
    }
    for i in thread::grid_stride(out.len()) {
        out.set(i, src[i.get()]);
    }
}

/// The thread whose global x index is `trigger` panics with a plain message.
#[kernel]
pub fn panic_at(trigger: u32, mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    if i.get() == trigger as usize {
        panic!("planted panic"); // FAULT-MARKER: panic_at
    }
    out.set(i, 1);
}

/// The thread whose global x index is `trigger` fails an `assert!` with a formatted message.
#[kernel]
pub fn assert_at(trigger: u32, mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    let ok = i.get() != trigger as usize;
    assert!(ok, "thread {} hit the planted assertion", i.get()); // FAULT-MARKER: assert_at
    out.set(i, 2);
}

/// Reads `input[i + offset]`: threads whose index runs past the input panic with Rust's
/// "index out of bounds" (a bounds check, not an illegal address).
#[kernel]
pub fn index_oob(offset: u32, input: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    if i.get() < out.len() {
        let v = input[i.get() + offset as usize]; // FAULT-MARKER: index_oob
        out.set(i, v);
    }
}

/// Thread `trigger` stores through a raw pointer to an address that no allocation covers
/// (`bad_address`): the GPU reports an illegal address, a sticky error with no panic record.
#[kernel]
pub fn illegal_address(trigger: u32, bad_address: u64, mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    if i.get() == trigger as usize {
        // SAFETY: not safe at all: this is the planted fault.
        unsafe { (bad_address as *mut u32).write_volatile(0xdead) };
    }
    out.set(i, 3);
}

/// PLANTED BUG for memcheck: the last thread also writes one element past the end of `out`
/// (within the allocation's rounding, so it does not fault without the sanitizer).
#[kernel]
pub fn planted_oob_write(mut out: DisjointSlice<u32>) {
    let i = thread::global_index();
    let n = out.len();
    if i.get() + 1 == n {
        // SAFETY: deliberately unsound: writes `out[n]`, past the buffer.
        unsafe { out.as_mut_ptr().add(n).write_volatile(0xbad) };
    }
    out.set(i, 4);
}

/// PLANTED BUG for racecheck: every thread of the block writes its index to the same shared
/// word and reads it back with no barrier in between (write-after-write and read-after-write
/// hazards between warps).
#[kernel]
pub fn planted_shared_race(mut out: DisjointSlice<u32>) {
    let cell = shared_array!(u32, 1);
    let t = thread::local_index();
    cell.write_volatile(0, t);
    let seen = cell.read_volatile(0);
    out.set(thread::global_index(), seen);
}

/// The same exchange done right (barriers between the phases): racecheck must stay quiet.
#[kernel]
pub fn shared_no_race(mut out: DisjointSlice<u32>) {
    let cell = shared_array!(u32, 1);
    let t = thread::local_index();
    if t == 0 {
        cell.write(0, 42);
    }
    sync_threads();
    let seen = cell.read(0);
    sync_threads();
    out.set(thread::global_index(), seen + t);
}
