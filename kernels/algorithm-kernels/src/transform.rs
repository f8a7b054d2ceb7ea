//! `convert_<from>_<to>`: element-wise conversions between `f32` and the 16-bit floats
//! (round to nearest even), the transforms mixed-precision code needs most. Through
//! `gpu::packed`'s conversions: one `cvt` on the GPU (`half`'s own are bit manipulation in
//! software there), the same bits on the host and in the simulator.

use gpu::packed::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use half::{bf16, f16};

gpu::transform_kernel!(convert_f32_f16, f32 => f16, f32_to_f16);
gpu::transform_kernel!(convert_f32_bf16, f32 => bf16, f32_to_bf16);
gpu::transform_kernel!(convert_f16_f32, f16 => f32, f16_to_f32);
gpu::transform_kernel!(convert_bf16_f32, bf16 => f32, bf16_to_f32);
