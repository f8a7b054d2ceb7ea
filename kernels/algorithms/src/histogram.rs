//! `histogram_even_<type>`: even-bin histograms.

gpu::histogram_even_kernel!(histogram_even_f32, f32);
gpu::histogram_even_kernel!(histogram_even_f64, f64);
gpu::histogram_even_kernel!(histogram_even_i32, i32);
gpu::histogram_even_kernel!(histogram_even_u32, u32);
gpu::histogram_even_kernel!(histogram_even_u8, u8);
gpu::histogram_even_kernel!(histogram_even_u16, u16);
