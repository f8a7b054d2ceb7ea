//! `segmented_reduce_<op>_<type>`: per-segment sums, minima and maxima.

use gpu::ops::{Max, Min, Sum};

macro_rules! segmented_all {
    ($($t:ident: $sum:ident $min:ident $max:ident;)*) => { $(
        gpu::segmented_reduce_kernel!($sum, $t, Sum);
        gpu::segmented_reduce_kernel!($min, $t, Min);
        gpu::segmented_reduce_kernel!($max, $t, Max);
    )* };
}

segmented_all! {
    f32: segmented_reduce_sum_f32 segmented_reduce_min_f32 segmented_reduce_max_f32;
    f64: segmented_reduce_sum_f64 segmented_reduce_min_f64 segmented_reduce_max_f64;
    i32: segmented_reduce_sum_i32 segmented_reduce_min_i32 segmented_reduce_max_i32;
    u32: segmented_reduce_sum_u32 segmented_reduce_min_u32 segmented_reduce_max_u32;
}
