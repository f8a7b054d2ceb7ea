//! Comparing results with a CPU reference.

/// The relative-norm error ‖got − want‖₂ / ‖want‖₂, accumulated one element at a time, so a
/// test can check each element as it goes (written, finite) and bound the whole at the end.
///
/// A norm rather than a per-element bound: reordered floating-point sums (tiles, tensor cores,
/// tree reductions) move single elements near zero by large relative amounts while the result
/// as a whole stays within a few ulps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RelNormError {
    err: f64,
    norm: f64,
}

impl RelNormError {
    /// Nothing added yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one element.
    pub fn add(&mut self, got: f64, want: f64) {
        self.err += (got - want) * (got - want);
        self.norm += want * want;
    }

    /// The error so far; 0 for no elements, and for an all-zero reference the absolute error
    /// ‖got‖₂ divided by the smallest positive `f64` (huge unless `got` is zero too).
    pub fn value(&self) -> f64 {
        (self.err / self.norm.max(f64::MIN_POSITIVE)).sqrt()
    }

    /// The error between two sequences of equal length.
    pub fn of(got: impl IntoIterator<Item = f64>, want: impl IntoIterator<Item = f64>) -> f64 {
        let mut e = Self::new();
        for (g, w) in got.into_iter().zip(want) {
            e.add(g, w);
        }
        e.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_norm_error() {
        assert_eq!(RelNormError::new().value(), 0.0);
        // ‖(0.3, -0.4)‖ / ‖(3, 4)‖ = 0.5 / 5.
        let e = RelNormError::of([3.3, 3.6], [3.0, 4.0]);
        assert!((e - 0.1).abs() < 1e-12, "{e}");
        assert_eq!(RelNormError::of([0.0], [0.0]), 0.0);
        assert!(RelNormError::of([1e-3], [0.0]) > 1e100);
        assert!(RelNormError::of([f64::NAN], [1.0]).is_nan());
    }
}
