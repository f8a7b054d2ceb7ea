//! `merge_<type>`: stable merge of two ascending runs; `lower_bound_<type>`: where queries fall
//! in an ascending run. Integer keys (the order of the radix sort's integer keys).

gpu::merge_kernel!(merge_u32, u32);
gpu::merge_kernel!(merge_i32, i32);
gpu::merge_kernel!(merge_u64, u64);
gpu::merge_kernel!(merge_i64, i64);

gpu::lower_bound_kernel!(lower_bound_u32, u32);
gpu::lower_bound_kernel!(lower_bound_i32, i32);
gpu::lower_bound_kernel!(lower_bound_u64, u64);
gpu::lower_bound_kernel!(lower_bound_i64, i64);
