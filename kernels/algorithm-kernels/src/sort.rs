//! Radix sort: `radix_sort_histogram_<key>`, `radix_sort_keys_<key>` (one pass) and
//! `radix_sort_pairs_<key>_<value>` (one pass) for keys `u32 i32 f32 u64 i64 f64` and values
//! `u32 u64`; for inputs of one block's tile, the single-launch `radix_sort_single_keys_<key>`
//! and `radix_sort_single_pairs_<key>_<value>`.

macro_rules! sorts {
    ($($k:ident: $hist:ident $keys:ident, $pairs32:ident $pairs64:ident, $skeys:ident $spairs32:ident $spairs64:ident;)*) => { $(
        gpu::radix_sort_histogram_kernel!($hist, $k);
        gpu::radix_sort_keys_kernel!($keys, $k);
        gpu::radix_sort_pairs_kernel!($pairs32, $k, u32);
        gpu::radix_sort_pairs_kernel!($pairs64, $k, u64);
        gpu::radix_sort_single_keys_kernel!($skeys, $k);
        gpu::radix_sort_single_pairs_kernel!($spairs32, $k, u32);
        gpu::radix_sort_single_pairs_kernel!($spairs64, $k, u64);
    )* };
}

sorts! {
    u32: radix_sort_histogram_u32 radix_sort_keys_u32, radix_sort_pairs_u32_u32 radix_sort_pairs_u32_u64,
        radix_sort_single_keys_u32 radix_sort_single_pairs_u32_u32 radix_sort_single_pairs_u32_u64;
    i32: radix_sort_histogram_i32 radix_sort_keys_i32, radix_sort_pairs_i32_u32 radix_sort_pairs_i32_u64,
        radix_sort_single_keys_i32 radix_sort_single_pairs_i32_u32 radix_sort_single_pairs_i32_u64;
    f32: radix_sort_histogram_f32 radix_sort_keys_f32, radix_sort_pairs_f32_u32 radix_sort_pairs_f32_u64,
        radix_sort_single_keys_f32 radix_sort_single_pairs_f32_u32 radix_sort_single_pairs_f32_u64;
    u64: radix_sort_histogram_u64 radix_sort_keys_u64, radix_sort_pairs_u64_u32 radix_sort_pairs_u64_u64,
        radix_sort_single_keys_u64 radix_sort_single_pairs_u64_u32 radix_sort_single_pairs_u64_u64;
    i64: radix_sort_histogram_i64 radix_sort_keys_i64, radix_sort_pairs_i64_u32 radix_sort_pairs_i64_u64,
        radix_sort_single_keys_i64 radix_sort_single_pairs_i64_u32 radix_sort_single_pairs_i64_u64;
    f64: radix_sort_histogram_f64 radix_sort_keys_f64, radix_sort_pairs_f64_u32 radix_sort_pairs_f64_u64,
        radix_sort_single_keys_f64 radix_sort_single_pairs_f64_u32 radix_sort_single_pairs_f64_u64;
}
