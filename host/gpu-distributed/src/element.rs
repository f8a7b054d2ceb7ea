//! The element types a communicator moves and reduces, and the reduction operators.

use gpu_host::DeviceCopy;
use half::{bf16, f16};

/// An element type of NCCL's: the buffers of collectives hold one of these.
///
/// Implemented for `u8`, `i32`, `u32`, `i64`, `u64`, `f16`, `bf16`, `f32` and `f64` (NCCL's
/// types); sealed, because NCCL has no others.
pub trait CommElement: DeviceCopy + Send + Sync + 'static + sealed::Sealed {
    /// The NCCL data type.
    const DATA_TYPE: DataType;
    /// `a ⊕ b` for the simulated communicator, as NCCL computes it.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
    /// `x / n` (for [`ReduceOp::Avg`]; integers divide rounding toward zero, as NCCL).
    fn divide(x: Self, n: usize) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

/// NCCL's element types (`ncclDataType_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DataType {
    U8 = 1,
    I32 = 2,
    U32 = 3,
    I64 = 4,
    U64 = 5,
    F16 = 6,
    F32 = 7,
    F64 = 8,
    Bf16 = 9,
}

impl DataType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::U8 => 1,
            DataType::F16 | DataType::Bf16 => 2,
            DataType::I32 | DataType::U32 | DataType::F32 => 4,
            DataType::I64 | DataType::U64 | DataType::F64 => 8,
        }
    }

    /// The Rust name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            DataType::U8 => "u8",
            DataType::I32 => "i32",
            DataType::U32 => "u32",
            DataType::I64 => "i64",
            DataType::U64 => "u64",
            DataType::F16 => "f16",
            DataType::F32 => "f32",
            DataType::F64 => "f64",
            DataType::Bf16 => "bf16",
        }
    }

    pub(crate) fn from_code(code: i32) -> Option<DataType> {
        Some(match code {
            1 => DataType::U8,
            2 => DataType::I32,
            3 => DataType::U32,
            4 => DataType::I64,
            5 => DataType::U64,
            6 => DataType::F16,
            7 => DataType::F32,
            8 => DataType::F64,
            9 => DataType::Bf16,
            _ => return None,
        })
    }
}

/// How a reduction combines the ranks' values (`ncclRedOp_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ReduceOp {
    Sum = 0,
    Prod = 1,
    Max = 2,
    Min = 3,
    /// The sum divided by the number of ranks.
    Avg = 4,
}

impl ReduceOp {
    pub(crate) fn from_code(code: i32) -> Option<ReduceOp> {
        Some(match code {
            0 => ReduceOp::Sum,
            1 => ReduceOp::Prod,
            2 => ReduceOp::Max,
            3 => ReduceOp::Min,
            4 => ReduceOp::Avg,
            _ => return None,
        })
    }
}

macro_rules! int_element {
    ($($t:ty => $dt:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl CommElement for $t {
            const DATA_TYPE: DataType = DataType::$dt;
            fn combine(op: ReduceOp, a: $t, b: $t) -> $t {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
            fn divide(x: $t, n: usize) -> $t {
                x / (n as $t)
            }
        }
    )*};
}
int_element!(u8 => U8, i32 => I32, u32 => U32, i64 => I64, u64 => U64);

macro_rules! float_element {
    ($($t:ty => $dt:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl CommElement for $t {
            const DATA_TYPE: DataType = DataType::$dt;
            fn combine(op: ReduceOp, a: $t, b: $t) -> $t {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg => a + b,
                    ReduceOp::Prod => a * b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
            fn divide(x: $t, n: usize) -> $t {
                x / (n as $t)
            }
        }
    )*};
}
float_element!(f32 => F32, f64 => F64);

macro_rules! half_element {
    ($($t:ty => $dt:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl CommElement for $t {
            const DATA_TYPE: DataType = DataType::$dt;
            fn combine(op: ReduceOp, a: $t, b: $t) -> $t {
                <$t>::from_f32(f32::combine(op, a.to_f32(), b.to_f32()))
            }
            fn divide(x: $t, n: usize) -> $t {
                <$t>::from_f32(x.to_f32() / n as f32)
            }
        }
    )*};
}
half_element!(f16 => F16, bf16 => Bf16);

/// Reduces `src` into `acc` element-wise, for raw little-endian bytes of `dt`.
pub(crate) fn combine_bytes(dt: DataType, op: ReduceOp, acc: &mut [u8], src: &[u8]) {
    fn go<T: CommElement>(op: ReduceOp, acc: &mut [u8], src: &[u8]) {
        let n = size_of::<T>();
        for (a, b) in acc.chunks_exact_mut(n).zip(src.chunks_exact(n)) {
            // SAFETY: each chunk holds exactly one `T` (plain data, any bit pattern valid);
            // unaligned reads and writes are used because byte buffers have no alignment.
            unsafe {
                let x = std::ptr::read_unaligned(a.as_ptr().cast::<T>());
                let y = std::ptr::read_unaligned(b.as_ptr().cast::<T>());
                std::ptr::write_unaligned(a.as_mut_ptr().cast::<T>(), T::combine(op, x, y));
            }
        }
    }
    match dt {
        DataType::U8 => go::<u8>(op, acc, src),
        DataType::I32 => go::<i32>(op, acc, src),
        DataType::U32 => go::<u32>(op, acc, src),
        DataType::I64 => go::<i64>(op, acc, src),
        DataType::U64 => go::<u64>(op, acc, src),
        DataType::F16 => go::<f16>(op, acc, src),
        DataType::F32 => go::<f32>(op, acc, src),
        DataType::F64 => go::<f64>(op, acc, src),
        DataType::Bf16 => go::<bf16>(op, acc, src),
    }
}

/// Divides every element of `acc` by `n` (the average's last step).
pub(crate) fn divide_bytes(dt: DataType, acc: &mut [u8], n: usize) {
    fn go<T: CommElement>(acc: &mut [u8], n: usize) {
        let size = size_of::<T>();
        for a in acc.chunks_exact_mut(size) {
            // SAFETY: as in `combine_bytes`.
            unsafe {
                let x = std::ptr::read_unaligned(a.as_ptr().cast::<T>());
                std::ptr::write_unaligned(a.as_mut_ptr().cast::<T>(), T::divide(x, n));
            }
        }
    }
    match dt {
        DataType::U8 => go::<u8>(acc, n),
        DataType::I32 => go::<i32>(acc, n),
        DataType::U32 => go::<u32>(acc, n),
        DataType::I64 => go::<i64>(acc, n),
        DataType::U64 => go::<u64>(acc, n),
        DataType::F16 => go::<f16>(acc, n),
        DataType::F32 => go::<f32>(acc, n),
        DataType::F64 => go::<f64>(acc, n),
        DataType::Bf16 => go::<bf16>(acc, n),
    }
}
