//! Dense matrix products, row-major.

/// `alpha * a[m,k] @ b[k,n] + beta * c[m,n]`, accumulated in f64. The
/// argument list mirrors BLAS sgemm, which readers compare it with.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    alpha: f32,
    beta: f32,
) -> Vec<f32> {
    assert_eq!(a.len(), m * k, "gemm reference: a is not m*k");
    assert_eq!(b.len(), k * n, "gemm reference: b is not k*n");
    assert_eq!(c.len(), m * n, "gemm reference: c is not m*n");
    let mut out = vec![0.0f32; m * n];
    for row in 0..m {
        for col in 0..n {
            let dot: f64 = (0..k)
                .map(|i| f64::from(a[row * k + i]) * f64::from(b[i * n + col]))
                .sum();
            let value = f64::from(alpha) * dot + f64::from(beta) * f64::from(c[row * n + col]);
            out[row * n + col] = value as f32;
        }
    }
    out
}

/// `a[m,k] @ b[k,n]` for any element convertible to f64, accumulated in f64.
pub fn matmul<T: Copy + Into<f64>>(m: usize, n: usize, k: usize, a: &[T], b: &[T]) -> Vec<f64> {
    assert_eq!(a.len(), m * k, "matmul reference: a is not m*k");
    assert_eq!(b.len(), k * n, "matmul reference: b is not k*n");
    let mut out = vec![0.0f64; m * n];
    for row in 0..m {
        for i in 0..k {
            let a_value: f64 = a[row * k + i].into();
            for col in 0..n {
                out[row * n + col] += a_value * b[i * n + col].into();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_by_two_by_hand() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0];
        let c = [1.0, 1.0, 1.0, 1.0];
        // a@b = [[19, 22], [43, 50]]
        assert_eq!(
            super::gemm(2, 2, 2, &a, &b, &c, 2.0, -1.0),
            vec![37.0, 43.0, 85.0, 99.0]
        );
        assert_eq!(super::matmul(2, 2, 2, &a, &b), vec![19.0, 22.0, 43.0, 50.0]);
    }
}
