//! Scaled dot-product attention, one head.

/// `softmax(scale * q @ k^T) @ v` for one head. `q` is `[seq_q, head_dim]`,
/// `k` is `[seq_k, head_dim]`, `v` is `[seq_k, value_dim]`, all row-major;
/// the result is `[seq_q, value_dim]`.
#[allow(clippy::too_many_arguments)]
pub fn attention<T: Copy + Into<f64>>(
    seq_q: usize,
    seq_k: usize,
    head_dim: usize,
    value_dim: usize,
    q: &[T],
    k: &[T],
    v: &[T],
    scale: f32,
) -> Vec<f64> {
    assert_eq!(
        q.len(),
        seq_q * head_dim,
        "attention reference: q is not seq_q*head_dim"
    );
    assert_eq!(
        k.len(),
        seq_k * head_dim,
        "attention reference: k is not seq_k*head_dim"
    );
    assert_eq!(
        v.len(),
        seq_k * value_dim,
        "attention reference: v is not seq_k*value_dim"
    );
    let mut out = vec![0.0f64; seq_q * value_dim];
    for i in 0..seq_q {
        let scores: Vec<f64> = (0..seq_k)
            .map(|j| {
                let dot: f64 = (0..head_dim)
                    .map(|c| q[i * head_dim + c].into() * k[j * head_dim + c].into())
                    .sum();
                dot * f64::from(scale)
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let denominator: f64 = weights.iter().sum();
        for (j, weight) in weights.iter().enumerate() {
            for c in 0..value_dim {
                out[i * value_dim + c] += weight / denominator * v[j * value_dim + c].into();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn single_key_returns_its_value() {
        let q = [1.0f32, 0.0, 0.0, 1.0];
        let out = super::attention(2, 1, 2, 3, &q, &[5.0, 5.0], &[1.0, 2.0, 3.0], 0.5);
        assert_eq!(out, vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn two_keys_by_hand() {
        // one query, scores [0, 9]: weights softmax([0, 9])
        let out = super::attention(1, 2, 1, 1, &[1.0f32], &[0.0, 9.0], &[10.0, 20.0], 1.0);
        let w = 9.0f64.exp() / (1.0 + 9.0f64.exp());
        assert!((out[0] - (10.0 * (1.0 - w) + 20.0 * w)).abs() < 1e-9);
    }
}
