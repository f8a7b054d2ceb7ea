//! Comparing GPU results with CPU references.

use std::fmt;

/// How far a GPU result is from its CPU reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub len: usize,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    /// First index whose error exceeds the tolerance, if any.
    pub first_mismatch: Option<usize>,
}

impl Comparison {
    pub fn passed(&self) -> bool {
        self.first_mismatch.is_none()
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.first_mismatch {
            None => write!(
                f,
                "OK: {} values, max abs error {:.3e}, max rel error {:.3e}",
                self.len, self.max_abs_error, self.max_rel_error
            ),
            Some(i) => write!(
                f,
                "MISMATCH at index {i} of {} (max abs error {:.3e})",
                self.len, self.max_abs_error
            ),
        }
    }
}

/// Element-wise comparison: `|got - want| <= abs_tol + rel_tol * |want|`.
pub fn compare<T: Copy + Into<f64>>(
    got: &[T],
    want: &[T],
    abs_tol: f64,
    rel_tol: f64,
) -> Comparison {
    let mut cmp = Comparison {
        len: want.len(),
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        first_mismatch: None,
    };
    if got.len() != want.len() {
        cmp.first_mismatch = Some(got.len().min(want.len()));
        return cmp;
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w): (f64, f64) = (g.into(), w.into());
        let err = (g - w).abs();
        cmp.max_abs_error = cmp.max_abs_error.max(err);
        if w != 0.0 {
            cmp.max_rel_error = cmp.max_rel_error.max(err / w.abs());
        }
        if (err > abs_tol + rel_tol * w.abs() || err.is_nan()) && cmp.first_mismatch.is_none() {
            cmp.first_mismatch = Some(i);
        }
    }
    cmp
}

/// Throughput of a timed kernel.
pub fn gb_per_s(bytes: usize, ms: f32) -> f64 {
    bytes as f64 / (ms as f64 * 1e-3) / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_and_mismatch_reporting() {
        assert!(compare(&[1.0f32, 2.0], &[1.0, 2.0 + 1e-7], 0.0, 1e-6).passed());
        let bad = compare(&[1.0f32, 2.5], &[1.0, 2.0], 1e-3, 0.0);
        assert_eq!(bad.first_mismatch, Some(1));
        assert!(bad.to_string().contains("MISMATCH at index 1"));
        assert!(!compare(&[f32::NAN], &[1.0], 1.0, 1.0).passed());
        assert!(!compare(&[1u8], &[1, 2], 0.0, 0.0).passed());
    }
}
