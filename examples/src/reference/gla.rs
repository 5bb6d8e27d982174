//! Gated linear attention in its recurrent form, one head: the chunkwise
//! kernel must agree with this step-by-step recurrence.

/// Inputs of one head: `q`, `k` are `[steps, key_dim]`, `v` is
/// `[steps, value_dim]`, `log_gate` is `[steps]` (the log of a scalar forget
/// gate per step, so values are <= 0).
pub struct GlaHead<'a> {
    pub steps: usize,
    pub key_dim: usize,
    pub value_dim: usize,
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub log_gate: &'a [f32],
}

/// For each step t: `S = exp(g[t]) S + k[t]^T v[t]`, `o[t] = scale * q[t] S`.
/// With `magnitude`, every input is replaced by its absolute value, which
/// gives the scale of the sum's terms (used to size error bounds).
pub fn gla_recurrent(head: &GlaHead<'_>, scale: f32, magnitude: bool) -> Vec<f64> {
    let GlaHead {
        steps,
        key_dim,
        value_dim,
        q,
        k,
        v,
        log_gate,
    } = *head;
    assert_eq!(
        q.len(),
        steps * key_dim,
        "gla reference: q is not steps*key_dim"
    );
    assert_eq!(
        k.len(),
        steps * key_dim,
        "gla reference: k is not steps*key_dim"
    );
    assert_eq!(
        v.len(),
        steps * value_dim,
        "gla reference: v is not steps*value_dim"
    );
    assert_eq!(
        log_gate.len(),
        steps,
        "gla reference: log_gate is not steps"
    );
    let read = |x: f32| {
        if magnitude {
            f64::from(x).abs()
        } else {
            f64::from(x)
        }
    };
    let mut state = vec![0.0f64; key_dim * value_dim];
    let mut out = vec![0.0f64; steps * value_dim];
    for t in 0..steps {
        let decay = f64::from(log_gate[t]).exp();
        for a in 0..key_dim {
            let key = read(k[t * key_dim + a]);
            for b in 0..value_dim {
                let cell = &mut state[a * value_dim + b];
                *cell = decay * *cell + key * read(v[t * value_dim + b]);
            }
        }
        for b in 0..value_dim {
            let total: f64 = (0..key_dim)
                .map(|a| read(q[t * key_dim + a]) * state[a * value_dim + b])
                .sum();
            out[t * value_dim + b] = read(scale) * total;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{GlaHead, gla_recurrent};

    #[test]
    fn no_decay_is_causal_linear_attention() {
        // key_dim = value_dim = 1, g = 0: o[t] = q[t] * sum_{s<=t} k[s] v[s]
        let head = GlaHead {
            steps: 3,
            key_dim: 1,
            value_dim: 1,
            q: &[1.0, 2.0, 3.0],
            k: &[1.0, 1.0, 2.0],
            v: &[4.0, 5.0, 6.0],
            log_gate: &[0.0; 3],
        };
        assert_eq!(gla_recurrent(&head, 1.0, false), vec![4.0, 18.0, 63.0]);
    }

    #[test]
    fn decay_shrinks_history() {
        let half = 0.5f32.ln();
        let head = GlaHead {
            steps: 2,
            key_dim: 1,
            value_dim: 1,
            q: &[1.0, 1.0],
            k: &[1.0, 0.0],
            v: &[8.0, 0.0],
            log_gate: &[half, half],
        };
        let out = gla_recurrent(&head, 1.0, false);
        // ln(0.5) rounded to f32 is off by ~1e-8 relative, so 4 is not exact.
        assert!(
            (out[0] - 8.0).abs() < 1e-12 && (out[1] - 4.0).abs() < 1e-6,
            "{out:?}"
        );
    }

    #[test]
    fn magnitude_bounds_the_result() {
        let head = GlaHead {
            steps: 2,
            key_dim: 2,
            value_dim: 1,
            q: &[1.0, -1.0, 0.5, 2.0],
            k: &[-1.0, 1.0, 1.0, -3.0],
            v: &[2.0, -1.0],
            log_gate: &[-0.1, -0.2],
        };
        let signed = gla_recurrent(&head, 0.5, false);
        let magnitude = gla_recurrent(&head, 0.5, true);
        for (s, m) in signed.iter().zip(&magnitude) {
            assert!(s.abs() <= *m + 1e-12);
        }
    }
}
