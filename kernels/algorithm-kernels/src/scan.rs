//! `inclusive_scan_<op>_<type>` and `exclusive_scan_<op>_<type>`: sums for every 4- and 8-byte
//! numeric type, running minimum and maximum for `f32` and `i32`.

use gpu::ops::{Max, Min, Sum};

macro_rules! scans {
    ($($t:ident, $op:ident: $inclusive:ident $exclusive:ident;)*) => { $(
        gpu::inclusive_scan_kernel!($inclusive, $t, $op);
        gpu::exclusive_scan_kernel!($exclusive, $t, $op);
    )* };
}

scans! {
    f32, Sum: inclusive_scan_sum_f32 exclusive_scan_sum_f32;
    f64, Sum: inclusive_scan_sum_f64 exclusive_scan_sum_f64;
    i32, Sum: inclusive_scan_sum_i32 exclusive_scan_sum_i32;
    u32, Sum: inclusive_scan_sum_u32 exclusive_scan_sum_u32;
    i64, Sum: inclusive_scan_sum_i64 exclusive_scan_sum_i64;
    u64, Sum: inclusive_scan_sum_u64 exclusive_scan_sum_u64;
    f32, Max: inclusive_scan_max_f32 exclusive_scan_max_f32;
    f32, Min: inclusive_scan_min_f32 exclusive_scan_min_f32;
    i32, Max: inclusive_scan_max_i32 exclusive_scan_max_i32;
    i32, Min: inclusive_scan_min_i32 exclusive_scan_min_i32;
}
