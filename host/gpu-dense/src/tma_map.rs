//! The one raw driver call of `gpu-dense`: encoding TMA descriptors (`cuTensorMapEncodeTiled`)
//! for the Hopper kernels (`hopper_gemm`, `hopper_attention`).

use gpu_host::cudarc::driver::sys;
use gpu_host::{Error, Result};

use crate::TensorMap;

/// Encodes the tiled tensor map of a row-major tensor at device address `addr`: `dims`
/// innermost first, `strides` the byte strides of the outer dimensions (`dims.len() - 1`
/// values), read in boxes of `boxes` elements (one per dimension) with the 128-byte swizzle the
/// wgmma descriptors expect; out-of-bounds parts of a box read as zeros. `what` names the
/// tensor and kernel in the error.
pub(crate) fn encode_tiled(
    data_type: sys::CUtensorMapDataType,
    addr: u64,
    dims: &[u64],
    strides: &[u64],
    boxes: &[u32],
    what: impl FnOnce() -> String,
) -> Result<TensorMap> {
    let rank = dims.len();
    assert!(
        (1..=5).contains(&rank) && strides.len() + 1 == rank && boxes.len() == rank,
        "encode_tiled: {rank} dims, {} strides, {} box sizes",
        strides.len(),
        boxes.len()
    );
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    let elem_strides = [1u32; 5];
    // SAFETY: every pointer addresses a live array of at least the length `rank` implies
    // (checked above); the callers pass a device address (allocations are 256-byte aligned)
    // and byte strides that are multiples of 16.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            rank as u32,
            addr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .map_err(|source| Error::Driver {
        context: format!("encoding the TMA descriptor of {}", what()),
        source,
    })?;
    Ok(TensorMap { words: map.opaque })
}
