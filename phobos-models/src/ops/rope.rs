//! Rotary position embedding, in ggml's two layouts: `Normal` rotates
//! adjacent pairs `(2i, 2i+1)` (llama), `Neox` rotates `(i, i + n_rot/2)`
//! (Gemma, Qwen). Angle of pair `i` at position `p`:
//! `p * freq_scale * base^(-2i/n_rot)`.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    Normal,
    Neox,
}

#[derive(Debug, Clone, Copy)]
pub struct Rope {
    pub style: RopeStyle,
    /// Dimensions rotated at the start of each head (the rest pass through).
    pub n_rot: usize,
    pub freq_base: f32,
    pub freq_scale: f32,
}

impl Rope {
    /// Rotates every head of one token's row (`head_dim`-wide heads) at `pos`.
    pub fn apply(&self, row: &mut [f32], head_dim: usize, pos: usize) {
        self.apply_angles(row, head_dim, &self.angles(pos));
    }

    /// `(cos, sin)` of each rotated pair's angle at `pos`, shared by every
    /// head and by a token's queries and keys.
    pub fn angles(&self, pos: usize) -> Vec<(f32, f32)> {
        let half = self.n_rot / 2;
        let theta_scale = self.freq_base.powf(-2.0 / self.n_rot as f32);
        let mut cos_sin = Vec::with_capacity(half);
        let mut theta = pos as f32 * self.freq_scale;
        for _ in 0..half {
            cos_sin.push((theta.cos(), theta.sin()));
            theta *= theta_scale;
        }
        cos_sin
    }

    /// [`Rope::apply`] with the angles from [`Rope::angles`].
    pub fn apply_angles(&self, row: &mut [f32], head_dim: usize, cos_sin: &[(f32, f32)]) {
        let half = cos_sin.len();
        for head in row.chunks_mut(head_dim) {
            for (i, &(c, s)) in cos_sin.iter().enumerate() {
                let (a, b) = match self.style {
                    RopeStyle::Normal => (2 * i, 2 * i + 1),
                    RopeStyle::Neox => (i, i + half),
                };
                let (x0, x1) = (head[a], head[b]);
                head[a] = x0 * c - x1 * s;
                head[b] = x0 * s + x1 * c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_f64_reference(neox in any::<bool>(), heads in 1usize..4, half in 1usize..32, pos in 0usize..5000, x in proptest::collection::vec(-3f32..3.0, 256)) {
            let head_dim = half * 2;
            let style = if neox { RopeStyle::Neox } else { RopeStyle::Normal };
            let rope = Rope { style, n_rot: head_dim, freq_base: 10000.0, freq_scale: 1.0 };
            let input = &x[..heads * head_dim];
            let mut got = input.to_vec();
            rope.apply(&mut got, head_dim, pos);
            for h in 0..heads {
                for i in 0..half {
                    let (a, b) = if neox { (i, i + half) } else { (2 * i, 2 * i + 1) };
                    let theta = pos as f64 * 10000f64.powf(-2.0 * i as f64 / head_dim as f64);
                    let (x0, x1) = (f64::from(input[h * head_dim + a]), f64::from(input[h * head_dim + b]));
                    let want_a = x0 * theta.cos() - x1 * theta.sin();
                    let want_b = x0 * theta.sin() + x1 * theta.cos();
                    // The angle is accumulated in f32 (as ggml does): its
                    // error grows with the position.
                    let tol = 1e-5 + 3e-7 * pos as f64 * 6.0;
                    prop_assert!((f64::from(got[h * head_dim + a]) - want_a).abs() <= tol);
                    prop_assert!((f64::from(got[h * head_dim + b]) - want_b).abs() <= tol);
                }
            }
        }
    }
}
