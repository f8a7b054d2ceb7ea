//! `select_compare_<type>`: selection and stable partition by comparison with a threshold.

use half::{bf16, f16};

gpu::select_compare_kernel!(select_compare_f32, f32);
gpu::select_compare_kernel!(select_compare_f64, f64);
gpu::select_compare_kernel!(select_compare_i32, i32);
gpu::select_compare_kernel!(select_compare_u32, u32);
gpu::select_compare_kernel!(select_compare_i64, i64);
gpu::select_compare_kernel!(select_compare_u64, u64);
gpu::select_compare_kernel!(select_compare_f16, f16);
gpu::select_compare_kernel!(select_compare_bf16, bf16);
