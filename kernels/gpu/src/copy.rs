//! Types that may cross the host/device boundary by plain byte copy.

/// A type whose values can be copied byte-for-byte between host and device memory and passed
/// by value as a kernel parameter.
///
/// # Safety
/// Implementors must be `#[repr(C)]` (or `#[repr(transparent)]`) plain data: every bit pattern
/// the host may write is a valid value, there are no padding bytes (so a value can be viewed as
/// initialized bytes), no pointers or references, and the layout is the same on host and
/// device. Use `#[derive(DeviceCopy)]`, which checks these at compile time.
pub unsafe trait DeviceCopy: Copy + 'static {}

macro_rules! impl_device_copy {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: primitive plain data, same layout on host and device, no padding.
        unsafe impl DeviceCopy for $t {}
    )* };
}

impl_device_copy!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64
);

// SAFETY: an array of padding-free plain data is padding-free plain data.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

#[cfg(feature = "half")]
impl_device_copy!(half::f16, half::bf16);

#[cfg(feature = "glam")]
impl_device_copy!(
    glam::Vec2,
    glam::Vec3,
    glam::Vec4,
    glam::IVec2,
    glam::IVec3,
    glam::IVec4,
    glam::UVec2,
    glam::UVec3,
    glam::UVec4,
    glam::DVec2,
    glam::DVec3,
    glam::DVec4,
    glam::Mat4,
);

/// Compile-time check used by `#[derive(DeviceCopy)]`: the struct has no padding.
#[doc(hidden)]
pub const fn assert_no_padding(type_size: usize, field_sizes: &[usize], type_name: &str) {
    let mut sum = 0;
    let mut i = 0;
    while i < field_sizes.len() {
        sum += field_sizes[i];
        i += 1;
    }
    if sum != type_size {
        let _ = type_name;
        panic!(
            "#[derive(DeviceCopy)]: this type has padding bytes; add explicit padding fields so every byte is initialized"
        );
    }
}

/// Compile-time check used by `#[derive(DeviceCopy)]`: every field is `DeviceCopy`.
#[doc(hidden)]
pub const fn assert_field_is_device_copy<T: DeviceCopy>() {}
