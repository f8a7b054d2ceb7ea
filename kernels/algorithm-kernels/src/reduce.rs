//! `reduce_<op>_<type>` for sum, min and max over every numeric type.

use gpu::ops::{Max, Min, Sum};
use half::{bf16, f16};

macro_rules! reduce_all {
    ($($t:ident: $sum:ident $min:ident $max:ident;)*) => { $(
        gpu::reduce_kernel!($sum, $t, Sum);
        gpu::reduce_kernel!($min, $t, Min);
        gpu::reduce_kernel!($max, $t, Max);
    )* };
}

reduce_all! {
    f32: reduce_sum_f32 reduce_min_f32 reduce_max_f32;
    f64: reduce_sum_f64 reduce_min_f64 reduce_max_f64;
    i32: reduce_sum_i32 reduce_min_i32 reduce_max_i32;
    u32: reduce_sum_u32 reduce_min_u32 reduce_max_u32;
    i64: reduce_sum_i64 reduce_min_i64 reduce_max_i64;
    u64: reduce_sum_u64 reduce_min_u64 reduce_max_u64;
    f16: reduce_sum_f16 reduce_min_f16 reduce_max_f16;
    bf16: reduce_sum_bf16 reduce_min_bf16 reduce_max_bf16;
}
