//! `Dim3`: the shape of a grid or block, and a coordinate in one.

use core::fmt;

/// A 3-D extent or coordinate, like CUDA's `dim3`/`uint3`: the grid (in blocks) or block (in
/// threads) of a launch on the host, `blockIdx`/`blockDim`/... on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Dim3 {
    /// Extent (or coordinate) along x.
    pub x: u32,
    /// Extent (or coordinate) along y.
    pub y: u32,
    /// Extent (or coordinate) along z.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    #[inline(always)]
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x * y * z`: the number of points in an extent. `u64`, so it cannot overflow (a grid
    /// can hold more than 2^32 blocks).
    #[inline(always)]
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    /// Whether any extent is zero (nothing to run).
    #[inline(always)]
    pub const fn is_empty(self) -> bool {
        self.x == 0 || self.y == 0 || self.z == 0
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3::new(x, y, z)
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_does_not_overflow() {
        assert_eq!(Dim3::new(65_535, 65_535, 65_535).volume(), 65_535u64.pow(3));
        assert!(Dim3::new(4, 0, 1).is_empty());
        assert_eq!(Dim3::from((2, 3)), Dim3::new(2, 3, 1));
    }
}
