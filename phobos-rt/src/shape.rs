//! Tensor shapes.

use crate::{Error, Result};

/// The extents of a tensor, outermost first. Build one from `[usize; N]`,
/// `&[usize]` or `Vec<usize>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// The extents.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements, or an error when it overflows `usize`.
    pub fn elem_count(&self) -> Result<usize> {
        self.0
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| Error::ShapeOverflow {
                shape: self.0.clone(),
            })
    }

    /// Row-major (C order) strides in elements.
    pub fn row_major_strides(&self) -> Vec<usize> {
        let mut strides = vec![0; self.0.len()];
        let mut step = 1usize;
        for (stride, &dim) in strides.iter_mut().zip(&self.0).rev() {
            *stride = step;
            step = step.saturating_mul(dim);
        }
        strides
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Self {
        Shape(dims)
    }
}

impl From<&[usize]> for Shape {
    fn from(dims: &[usize]) -> Self {
        Shape(dims.to_vec())
    }
}

impl From<&Vec<usize>> for Shape {
    fn from(dims: &Vec<usize>) -> Self {
        Shape(dims.clone())
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(dims: [usize; N]) -> Self {
        Shape(dims.to_vec())
    }
}

impl<const N: usize> From<&[usize; N]> for Shape {
    fn from(dims: &[usize; N]) -> Self {
        Shape(dims.to_vec())
    }
}

impl From<&Shape> for Shape {
    fn from(shape: &Shape) -> Self {
        shape.clone()
    }
}

impl AsRef<[usize]> for Shape {
    fn as_ref(&self) -> &[usize] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_strides_and_counts() {
        let s = Shape::from([2, 3, 4]);
        assert_eq!(s.row_major_strides(), vec![12, 4, 1]);
        assert_eq!(s.elem_count().unwrap(), 24);
        assert_eq!(Shape::from(Vec::new()).elem_count().unwrap(), 1);
        assert!(matches!(
            Shape::from([usize::MAX, 2]).elem_count(),
            Err(Error::ShapeOverflow { .. })
        ));
    }
}
