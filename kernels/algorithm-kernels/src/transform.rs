//! `convert_<from>_<to>`: element-wise conversions between `f32` and the 16-bit floats
//! (round to nearest even), the transforms mixed-precision code needs most.

use half::{bf16, f16};

gpu::transform_kernel!(convert_f32_f16, f32 => f16, f16::from_f32);
gpu::transform_kernel!(convert_f32_bf16, f32 => bf16, bf16::from_f32);
gpu::transform_kernel!(convert_f16_f32, f16 => f32, f16::to_f32);
gpu::transform_kernel!(convert_bf16_f32, bf16 => f32, bf16::to_f32);
