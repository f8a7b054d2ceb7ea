//! Radix sort: `radix_sort_histogram_<key>`, `radix_sort_keys_<key>` (one pass) and
//! `radix_sort_pairs_<key>_<value>` (one pass) for keys `u32 i32 f32 u64 i64 f64` and values
//! `u32 u64`.

macro_rules! sorts {
    ($($k:ident: $hist:ident $keys:ident, $pairs32:ident $pairs64:ident;)*) => { $(
        gpu::radix_sort_histogram_kernel!($hist, $k);
        gpu::radix_sort_keys_kernel!($keys, $k);
        gpu::radix_sort_pairs_kernel!($pairs32, $k, u32);
        gpu::radix_sort_pairs_kernel!($pairs64, $k, u64);
    )* };
}

sorts! {
    u32: radix_sort_histogram_u32 radix_sort_keys_u32, radix_sort_pairs_u32_u32 radix_sort_pairs_u32_u64;
    i32: radix_sort_histogram_i32 radix_sort_keys_i32, radix_sort_pairs_i32_u32 radix_sort_pairs_i32_u64;
    f32: radix_sort_histogram_f32 radix_sort_keys_f32, radix_sort_pairs_f32_u32 radix_sort_pairs_f32_u64;
    u64: radix_sort_histogram_u64 radix_sort_keys_u64, radix_sort_pairs_u64_u32 radix_sort_pairs_u64_u64;
    i64: radix_sort_histogram_i64 radix_sort_keys_i64, radix_sort_pairs_i64_u32 radix_sort_pairs_i64_u64;
    f64: radix_sort_histogram_f64 radix_sort_keys_f64, radix_sort_pairs_f64_u32 radix_sort_pairs_f64_u64;
}
