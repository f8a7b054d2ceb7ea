//! Every atomic operation × type × scope, on global memory and on shared memory (through the
//! `SharedArray` methods, `atomic::shared::*` with a shared-window address, and generic
//! pointers into shared memory).
//!
//! # Slot layout
//! Each type's buffer holds *groups* of [`SLOTS`] slots; in each group every participating
//! thread (rank `r` in `0..n`) performs, on slot:
//!
//! | slot | operation                                   | initial value             | expected final value              |
//! |------|---------------------------------------------|---------------------------|-----------------------------------|
//! | 0 `ADD` | `add(r + 1)`                             | 0                         | `n(n+1)/2`                        |
//! | 1 `SUB` | `sub(r + 1)`                             | 10000                     | `10000 - n(n+1)/2`                |
//! | 2 `MIN` | `min(minmax(r, n))`                      | type max (`f*::MAX`)      | unsigned: 5; signed/float: `-(n/2)` |
//! | 3 `MAX` | `max(minmax(r, n))`                      | type min (0; `-f*::MAX`)  | unsigned: `n + 4`; signed/float: `n/2 - 1` |
//! | 4 `AND` | `and(!(1 << r % 32))` (integers)         | all ones (floats: 0)      | 32-bit: 0; 64-bit: `0xFFFF_FFFF_0000_0000`; floats: 0 |
//! | 5 `OR`  | `or(1 << r % 32)` (integers)             | 0                         | `0xFFFF_FFFF`; floats: 0          |
//! | 6 `XOR` | `xor(r + 1)` (integers)                  | 0                         | `n` (n is a multiple of 4); floats: 0 |
//! | 7 `EXCH` | `exch(r + 1)`, old value added to slot 11 | 0                       | some value in `1..=n`             |
//! | 8 `CAS_LOOP` | increment by a `cas` retry loop     | 0                         | `n`                               |
//! | 9 `CAS_ONCE` | `cas(0 → r + 1)` once; winners count in slot 10 | 0         | some value in `1..=n`             |
//! | 10 `CAS_WINNERS` | `add(1)` by the thread whose `cas` found 0 | 0          | 1                                 |
//! | 11 `EXCH_OLD_SUM` | `add(old)` of every `exch`       | 0                         | `n(n+1)/2 - final[EXCH]`          |
//!
//! `minmax(r, n)` is `(r * 37) % n + 5` for unsigned types and `(r * 37) % n - n / 2` for
//! signed and float types (37 is coprime to n, so every residue occurs). Values are written in
//! the slot's type (`as` conversions; floats hold these small integers exactly).

use gpu::atomic::{self, AtomicArith, AtomicBitwise, Scope};
use gpu::prelude::*;

/// Slots per group.
pub const SLOTS: usize = 12;
pub const ADD: usize = 0;
pub const SUB: usize = 1;
pub const MIN: usize = 2;
pub const MAX: usize = 3;
pub const AND: usize = 4;
pub const OR: usize = 5;
pub const XOR: usize = 6;
pub const EXCH: usize = 7;
pub const CAS_LOOP: usize = 8;
pub const CAS_ONCE: usize = 9;
pub const CAS_WINNERS: usize = 10;
pub const EXCH_OLD_SUM: usize = 11;

/// Groups per type buffer in global memory.
pub const GLOBAL_GROUPS: usize = 9;
/// Slots per type buffer in global memory.
pub const GLOBAL_LEN: usize = GLOBAL_GROUPS * SLOTS;
/// Groups per type array in shared memory.
pub const SHARED_GROUPS: usize = 5;
/// Slots per type array in shared memory.
pub const SHARED_LEN: usize = SHARED_GROUPS * SLOTS;
/// `u32` buffers have two more slots after the groups: `inc_wrap(limit 9)` at `len`,
/// `dec_wrap(limit 9)` at `len + 1`.
pub const U32_EXTRA: usize = 2;

/// A type the atomic tests run on.
pub trait TestValue: AtomicArith + DeviceCopy {
    /// A small non-negative integer in this type.
    fn small(x: u32) -> Self;
    /// The min/max operand of rank `r` of `n` (see the module docs).
    fn minmax(r: u32, n: u32) -> Self;
    /// The initial value of slot `slot % SLOTS`.
    fn init(slot: usize) -> Self;
    /// Bitwise equality (what `cas` compares).
    fn same(a: Self, b: Self) -> bool;
    /// `a + 1`.
    fn plus_one(a: Self) -> Self;
}

/// An integer type the bitwise atomic tests run on.
pub trait TestBits: TestValue + AtomicBitwise {
    /// `1 << i`.
    fn bit(i: u32) -> Self;
    /// `!self`.
    fn invert(self) -> Self;
}

macro_rules! test_int {
    ($($t:ty, $signed:literal;)*) => { $(
        impl TestValue for $t {
            fn small(x: u32) -> Self {
                x as $t
            }
            fn minmax(r: u32, n: u32) -> Self {
                let residue = ((r * 37) % n) as $t;
                if $signed { residue.wrapping_sub((n / 2) as $t) } else { residue + 5 }
            }
            fn init(slot: usize) -> Self {
                match slot % SLOTS {
                    SUB => 10000,
                    MIN => <$t>::MAX,
                    MAX => <$t>::MIN,
                    AND => !0,
                    _ => 0,
                }
            }
            fn same(a: Self, b: Self) -> bool {
                a == b
            }
            fn plus_one(a: Self) -> Self {
                a.wrapping_add(1)
            }
        }
        impl TestBits for $t {
            fn bit(i: u32) -> Self {
                1 << i
            }
            fn invert(self) -> Self {
                !self
            }
        }
    )* };
}

test_int!(u32, false; i32, true; u64, false; i64, true;);

macro_rules! test_float {
    ($($t:ty;)*) => { $(
        impl TestValue for $t {
            fn small(x: u32) -> Self {
                x as $t
            }
            fn minmax(r: u32, n: u32) -> Self {
                ((r * 37) % n) as $t - (n / 2) as $t
            }
            fn init(slot: usize) -> Self {
                match slot % SLOTS {
                    SUB => 10000.0,
                    MIN => <$t>::MAX,
                    MAX => -<$t>::MAX,
                    _ => 0.0,
                }
            }
            fn same(a: Self, b: Self) -> bool {
                a.to_bits() == b.to_bits()
            }
            fn plus_one(a: Self) -> Self {
                a + 1.0
            }
        }
    )* };
}

test_float!(f32; f64;);

/// Twelve atomic slots reached one particular way.
trait Slots<T: TestValue> {
    fn add(&self, k: usize, v: T) -> T;
    fn sub(&self, k: usize, v: T) -> T;
    fn min(&self, k: usize, v: T) -> T;
    fn max(&self, k: usize, v: T) -> T;
    fn exch(&self, k: usize, v: T) -> T;
    fn cas(&self, k: usize, expected: T, new: T) -> T;
}

/// The bitwise operations on the same slots.
trait BitSlots<T: TestBits> {
    fn and(&self, k: usize, v: T) -> T;
    fn or(&self, k: usize, v: T) -> T;
    fn xor(&self, k: usize, v: T) -> T;
}

/// Generic address, the default (device-scope) functions: global memory, or a generic pointer
/// into shared memory.
struct Generic<T>(*mut T);

/// Generic address with an explicit scope (`*_scoped`).
struct GenericScoped<T>(*mut T, Scope);

/// `SharedArray` methods (block scope), slots `base..base + SLOTS`.
struct Methods<T, const N: usize>(SharedArray<T, N>, usize);

/// `atomic::global::*` (`atom.global`) with an explicit scope.
struct GlobalSpace<T>(*mut T, Scope);

/// `atomic::shared::*` on shared-window addresses with an explicit scope.
struct SharedScoped<T, const N: usize>(SharedArray<T, N>, usize, Scope);

// SAFETY (all `Generic*` impls): the pointers address SLOTS valid, aligned slots of a buffer that
// this kernel accesses only atomically (`k < SLOTS`).
impl<T: TestValue> Slots<T> for Generic<T> {
    fn add(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::add(self.0.add(k), v) }
    }
    fn sub(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::sub(self.0.add(k), v) }
    }
    fn min(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::min(self.0.add(k), v) }
    }
    fn max(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::max(self.0.add(k), v) }
    }
    fn exch(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::exch(self.0.add(k), v) }
    }
    fn cas(&self, k: usize, expected: T, new: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::cas(self.0.add(k), expected, new) }
    }
}

impl<T: TestBits> BitSlots<T> for Generic<T> {
    fn and(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::and(self.0.add(k), v) }
    }
    fn or(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::or(self.0.add(k), v) }
    }
    fn xor(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::xor(self.0.add(k), v) }
    }
}

impl<T: TestValue> Slots<T> for GenericScoped<T> {
    fn add(&self, k: usize, v: T) -> T {
        // SAFETY: see above; block-scoped groups are touched by one block only.
        unsafe { atomic::add_scoped(self.0.add(k), v, self.1) }
    }
    fn sub(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::sub_scoped(self.0.add(k), v, self.1) }
    }
    fn min(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::min_scoped(self.0.add(k), v, self.1) }
    }
    fn max(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::max_scoped(self.0.add(k), v, self.1) }
    }
    fn exch(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::exch_scoped(self.0.add(k), v, self.1) }
    }
    fn cas(&self, k: usize, expected: T, new: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::cas_scoped(self.0.add(k), expected, new, self.1) }
    }
}

impl<T: TestBits> BitSlots<T> for GenericScoped<T> {
    fn and(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::and_scoped(self.0.add(k), v, self.1) }
    }
    fn or(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::or_scoped(self.0.add(k), v, self.1) }
    }
    fn xor(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::xor_scoped(self.0.add(k), v, self.1) }
    }
}

impl<T: TestValue> Slots<T> for GlobalSpace<T> {
    fn add(&self, k: usize, v: T) -> T {
        // SAFETY: see above; the buffer is global memory.
        unsafe { atomic::global::add(self.0.add(k), v, self.1) }
    }
    fn sub(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::sub(self.0.add(k), v, self.1) }
    }
    fn min(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::min(self.0.add(k), v, self.1) }
    }
    fn max(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::max(self.0.add(k), v, self.1) }
    }
    fn exch(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::exch(self.0.add(k), v, self.1) }
    }
    fn cas(&self, k: usize, expected: T, new: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::cas(self.0.add(k), expected, new, self.1) }
    }
}

impl<T: TestBits> BitSlots<T> for GlobalSpace<T> {
    fn and(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::and(self.0.add(k), v, self.1) }
    }
    fn or(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::or(self.0.add(k), v, self.1) }
    }
    fn xor(&self, k: usize, v: T) -> T {
        // SAFETY: as for `add`.
        unsafe { atomic::global::xor(self.0.add(k), v, self.1) }
    }
}

impl<T: TestValue, const N: usize> Slots<T> for Methods<T, N> {
    fn add(&self, k: usize, v: T) -> T {
        if k == ADD {
            self.0.atomic_add(self.1 + k, v)
        } else {
            self.0.atomic_add_scoped(self.1 + k, v, Scope::Block)
        }
    }
    fn sub(&self, k: usize, v: T) -> T {
        self.0.atomic_sub(self.1 + k, v)
    }
    fn min(&self, k: usize, v: T) -> T {
        self.0.atomic_min(self.1 + k, v)
    }
    fn max(&self, k: usize, v: T) -> T {
        self.0.atomic_max(self.1 + k, v)
    }
    fn exch(&self, k: usize, v: T) -> T {
        self.0.atomic_exch(self.1 + k, v)
    }
    fn cas(&self, k: usize, expected: T, new: T) -> T {
        self.0.atomic_cas(self.1 + k, expected, new)
    }
}

impl<T: TestBits, const N: usize> BitSlots<T> for Methods<T, N> {
    fn and(&self, k: usize, v: T) -> T {
        self.0.atomic_and(self.1 + k, v)
    }
    fn or(&self, k: usize, v: T) -> T {
        self.0.atomic_or(self.1 + k, v)
    }
    fn xor(&self, k: usize, v: T) -> T {
        self.0.atomic_xor(self.1 + k, v)
    }
}

// SAFETY (all `SharedScoped` impls): `addr_of` checks the index and yields the address of an
// aligned element of this block's shared array, accessed only atomically during the test.
impl<T: TestValue, const N: usize> Slots<T> for SharedScoped<T, N> {
    fn add(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::add(self.0.addr_of(self.1 + k), v, self.2) }
    }
    fn sub(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::sub(self.0.addr_of(self.1 + k), v, self.2) }
    }
    fn min(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::min(self.0.addr_of(self.1 + k), v, self.2) }
    }
    fn max(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::max(self.0.addr_of(self.1 + k), v, self.2) }
    }
    fn exch(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::exch(self.0.addr_of(self.1 + k), v, self.2) }
    }
    fn cas(&self, k: usize, expected: T, new: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::cas(self.0.addr_of(self.1 + k), expected, new, self.2) }
    }
}

impl<T: TestBits, const N: usize> BitSlots<T> for SharedScoped<T, N> {
    fn and(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::and(self.0.addr_of(self.1 + k), v, self.2) }
    }
    fn or(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::or(self.0.addr_of(self.1 + k), v, self.2) }
    }
    fn xor(&self, k: usize, v: T) -> T {
        // SAFETY: see above.
        unsafe { atomic::shared::xor(self.0.addr_of(self.1 + k), v, self.2) }
    }
}

/// The arithmetic, exchange and CAS part of the slot table for rank `r` of `n`.
#[inline(always)]
fn exercise<T: TestValue, S: Slots<T>>(s: &S, r: u32, n: u32) {
    s.add(ADD, T::small(r + 1));
    s.sub(SUB, T::small(r + 1));
    s.min(MIN, T::minmax(r, n));
    s.max(MAX, T::minmax(r, n));
    let old = s.exch(EXCH, T::small(r + 1));
    s.add(EXCH_OLD_SUM, old);
    let mut guess = T::small(0);
    loop {
        let seen = s.cas(CAS_LOOP, guess, T::plus_one(guess));
        if T::same(seen, guess) {
            break;
        }
        guess = seen;
    }
    if T::same(s.cas(CAS_ONCE, T::small(0), T::small(r + 1)), T::small(0)) {
        s.add(CAS_WINNERS, T::small(1));
    }
}

/// The bitwise part of the slot table for rank `r`.
#[inline(always)]
fn exercise_bits<T: TestBits, S: BitSlots<T>>(s: &S, r: u32) {
    s.and(AND, T::bit(r % 32).invert());
    s.or(OR, T::bit(r % 32));
    s.xor(XOR, T::small(r + 1));
}

/// Writes each slot's initial value: thread `g` initializes element `g` of every buffer.
///
/// Launch: 1 block × 128 threads (at least `GLOBAL_LEN + 2 = 110` threads in total). Buffers:
/// `u32s.len() == 110`, the others `108` (`GLOBAL_LEN`).
#[kernel]
pub fn selftest_atomics_init(
    mut u32s: DisjointSlice<u32>,
    mut i32s: DisjointSlice<i32>,
    mut u64s: DisjointSlice<u64>,
    mut i64s: DisjointSlice<i64>,
    mut f32s: DisjointSlice<f32>,
    mut f64s: DisjointSlice<f64>,
) {
    let g = thread::global_index();
    let slot = g.get();
    u32s.set(
        g,
        if slot < GLOBAL_LEN {
            u32::init(slot)
        } else {
            0
        },
    );
    i32s.set(g, i32::init(slot));
    u64s.set(g, u64::init(slot));
    i64s.set(g, i64::init(slot));
    f32s.set(g, f32::init(slot));
    f64s.set(g, f64::init(slot));
}

#[inline(always)]
fn global_groups_arith<T: TestValue>(base: *mut T) {
    let (r, n) = (
        thread::global_index().get() as u32,
        thread::grid_size() as u32,
    );
    let (rb, nb, b) = (
        thread::local_index(),
        thread::block_size(),
        thread::block_idx_x() as usize,
    );
    // SAFETY: every group lies inside the `GLOBAL_LEN`-slot buffer; `b` is 0 or 1 in the
    // stated launch.
    unsafe {
        exercise(&Generic(base), r, n);
        exercise(&GenericScoped(base.add(SLOTS), Scope::Device), r, n);
        exercise(&GenericScoped(base.add(2 * SLOTS), Scope::System), r, n);
        exercise(
            &GenericScoped(base.add((3 + b) * SLOTS), Scope::Block),
            rb,
            nb,
        );
        exercise(&GlobalSpace(base.add(5 * SLOTS), Scope::Device), r, n);
        exercise(&GlobalSpace(base.add(6 * SLOTS), Scope::System), r, n);
        exercise(
            &GlobalSpace(base.add((7 + b) * SLOTS), Scope::Block),
            rb,
            nb,
        );
    }
}

#[inline(always)]
fn global_groups<T: TestBits>(base: *mut T) {
    global_groups_arith(base);
    let r = thread::global_index().get() as u32;
    let (rb, b) = (thread::local_index(), thread::block_idx_x() as usize);
    // SAFETY: as in `global_groups_arith`.
    unsafe {
        exercise_bits(&Generic(base), r);
        exercise_bits(&GenericScoped(base.add(SLOTS), Scope::Device), r);
        exercise_bits(&GenericScoped(base.add(2 * SLOTS), Scope::System), r);
        exercise_bits(&GenericScoped(base.add((3 + b) * SLOTS), Scope::Block), rb);
        exercise_bits(&GlobalSpace(base.add(5 * SLOTS), Scope::Device), r);
        exercise_bits(&GlobalSpace(base.add(6 * SLOTS), Scope::System), r);
        exercise_bits(&GlobalSpace(base.add((7 + b) * SLOTS), Scope::Block), rb);
    }
}

/// Launch: 2 blocks × 64 threads, right after [`selftest_atomics_init`] on the same buffers.
///
/// Groups (slots `12 * group ..`): generic addresses: 0 = default functions (device scope),
/// 1 = `*_scoped(Device)`, 2 = `*_scoped(System)`, 3 and 4 = `*_scoped(Block)` for block 0 and
/// block 1; `atomic::global::*` (`atom.global`): 5 = `Device`, 6 = `System`, 7 and 8 = `Block`
/// for block 0 and 1. Groups 0, 1, 2, 5, 6 see all 128 threads (`r = global index`, `n = 128`),
/// the block groups one block (`r = local index`, `n = 64`). Expected values per the module
/// table; `u32s[108] = 8` (128 `inc_wrap(9)` from 0) and `u32s[109] = 2` (128 `dec_wrap(9)`
/// from 0).
#[kernel]
pub fn selftest_atomics_global(
    u32s: DisjointSlice<u32>,
    i32s: DisjointSlice<i32>,
    u64s: DisjointSlice<u64>,
    i64s: DisjointSlice<i64>,
    f32s: DisjointSlice<f32>,
    f64s: DisjointSlice<f64>,
) {
    global_groups(u32s.as_mut_ptr());
    global_groups(i32s.as_mut_ptr());
    global_groups(u64s.as_mut_ptr());
    global_groups(i64s.as_mut_ptr());
    global_groups_arith(f32s.as_mut_ptr());
    global_groups_arith(f64s.as_mut_ptr());
    // SAFETY: slots 108 and 109 exist (`u32s.len() == 110`) and are accessed only atomically.
    unsafe {
        atomic::inc_wrap(u32s.as_mut_ptr().add(GLOBAL_LEN), 9);
        atomic::dec_wrap(u32s.as_mut_ptr().add(GLOBAL_LEN + 1), 9);
    }
}

#[inline(always)]
fn shared_groups_arith<T: TestValue, const N: usize>(a: SharedArray<T, N>) {
    let (r, n) = (thread::local_index(), thread::block_size());
    exercise(&Methods(a, 0), r, n);
    exercise(&SharedScoped(a, SLOTS, Scope::Block), r, n);
    exercise(&SharedScoped(a, 2 * SLOTS, Scope::Device), r, n);
    exercise(&SharedScoped(a, 3 * SLOTS, Scope::System), r, n);
    // SAFETY: slots 48..60 are inside the array.
    exercise(&Generic(unsafe { a.as_ptr().add(4 * SLOTS) }), r, n);
}

#[inline(always)]
fn shared_groups<T: TestBits, const N: usize>(a: SharedArray<T, N>) {
    shared_groups_arith(a);
    let r = thread::local_index();
    exercise_bits(&Methods(a, 0), r);
    exercise_bits(&SharedScoped(a, SLOTS, Scope::Block), r);
    exercise_bits(&SharedScoped(a, 2 * SLOTS, Scope::Device), r);
    exercise_bits(&SharedScoped(a, 3 * SLOTS, Scope::System), r);
    // SAFETY: as in `shared_groups_arith`.
    exercise_bits(&Generic(unsafe { a.as_ptr().add(4 * SLOTS) }), r);
}

/// Initializes a block's shared slots, in parallel (thread `l` writes slot `l`).
#[inline(always)]
fn init_shared<T: TestValue, const N: usize>(a: SharedArray<T, N>) {
    let l = thread::local_index() as usize;
    if l < N {
        a.write(
            l,
            if l < SHARED_LEN {
                T::init(l)
            } else {
                T::small(0)
            },
        );
    }
}

/// Copies a block's shared slots out: `out[block * 64 + l] = slot l` (0 past the slots).
#[inline(always)]
fn copy_out<T: TestValue, const N: usize>(a: SharedArray<T, N>, out: &mut DisjointSlice<T>) {
    let l = thread::local_index() as usize;
    out.set(
        thread::global_index(),
        if l < N { a.read(l) } else { T::small(0) },
    );
}

/// Launch: 2 blocks × 64 threads; every output has 128 elements.
///
/// Each block runs the slot table on its own shared arrays with 5 groups, all with
/// `r = local index`, `n = 64`: 0 = `SharedArray::atomic_*` methods (block scope), 1/2/3 =
/// `atomic::shared::*` with `Scope::Block`/`Device`/`System`, 4 = default `atomic::*` through a
/// generic pointer into shared memory. Then `out[b * 64 + l]` = slot `l` for `l < 60`
/// (`l < 62` for `u32s`), 0 above. Expected values per the module table; `u32s[b*64 + 60] = 4`
/// (64 `inc_wrap(9)` from 0), `u32s[b*64 + 61] = 6` (64 `dec_wrap(9)` from 0).
#[kernel]
pub fn selftest_atomics_shared(
    mut u32s: DisjointSlice<u32>,
    mut i32s: DisjointSlice<i32>,
    mut u64s: DisjointSlice<u64>,
    mut i64s: DisjointSlice<i64>,
    mut f32s: DisjointSlice<f32>,
    mut f64s: DisjointSlice<f64>,
) {
    let su32 = shared_array!(u32, SHARED_LEN + U32_EXTRA);
    let si32 = shared_array!(i32, SHARED_LEN);
    let su64 = shared_array!(u64, SHARED_LEN);
    let si64 = shared_array!(i64, SHARED_LEN);
    let sf32 = shared_array!(f32, SHARED_LEN);
    let sf64 = shared_array!(f64, SHARED_LEN);
    init_shared(su32);
    init_shared(si32);
    init_shared(su64);
    init_shared(si64);
    init_shared(sf32);
    init_shared(sf64);
    sync_threads();

    shared_groups(su32);
    shared_groups(si32);
    shared_groups(su64);
    shared_groups(si64);
    shared_groups_arith(sf32);
    shared_groups_arith(sf64);
    // SAFETY: slots 60 and 61 of `su32` exist and are accessed only atomically here.
    unsafe {
        atomic::inc_wrap(su32.as_ptr().add(SHARED_LEN), 9);
        atomic::dec_wrap(su32.as_ptr().add(SHARED_LEN + 1), 9);
    }
    sync_threads();

    copy_out(su32, &mut u32s);
    copy_out(si32, &mut i32s);
    copy_out(su64, &mut u64s);
    copy_out(si64, &mut i64s);
    copy_out(sf32, &mut f32s);
    copy_out(sf64, &mut f64s);
}
