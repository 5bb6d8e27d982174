//! Bound, with u = 2^-24, relative to the same recurrence run on absolute
//! values (`o_abs`, the scale of the terms summed into each output):
//!
//! - the in-chunk log decays are a cumsum of at most CHUNK gates `|g| <=
//!   g_max`, so each is off by `CHUNK^2 g_max u`; a decay factor
//!   `exp(D_i - D_j)` is then off by `E = (2 CHUNK^2 g_max + CHUNK g_max +
//!   2) u` relative (two cumsums, the subtraction, `exp` within 2 ulp), and
//!   an output term meets at most three such factors;
//! - the contractions sum 64 key channels (twice) and CHUNK steps (twice),
//!   and the carried state accumulates one chunk's CHUNK terms per chunk,
//!   T in all: `(T + 4 CHUNK + 160) u`.
//!
//! The largest CHUNK gives the largest bound.

use super::U;
use crate::random::SplitMix64;
use crate::reference::gla::{GlaHead, gla_recurrent};

/// The key and value dimension of the example GLA kernel.
pub const DIM: usize = 64;

/// The largest gate magnitude `g_max`: log gates are uniform in
/// `[-GATE_MAX, 0)`.
pub const GATE_MAX: f32 = 0.3;

/// Q, K, V (`[heads, steps, DIM]`, uniform in [-1, 1)) and the log gates
/// (`[heads, steps]`).
pub struct GlaInputs {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub log_gate: Vec<f32>,
}

impl GlaInputs {
    /// Q, K, V and the gates, drawn in that order.
    pub fn random(rng: &mut SplitMix64, heads: usize, steps: usize) -> GlaInputs {
        let q = rng.vec(heads * steps * DIM, -1.0, 1.0);
        let k = rng.vec(heads * steps * DIM, -1.0, 1.0);
        let v = rng.vec(heads * steps * DIM, -1.0, 1.0);
        let log_gate = rng.vec(heads * steps, -GATE_MAX, 0.0);
        GlaInputs { q, k, v, log_gate }
    }

    /// The recurrence per head in f64: the exact outputs and `o_abs`, the
    /// same run on absolute values.
    pub fn reference(&self, heads: usize, steps: usize, scale: f32) -> (Vec<f64>, Vec<f64>) {
        let per_head = steps * DIM;
        let (mut exact, mut magnitude) = (Vec::new(), Vec::new());
        for h in 0..heads {
            let head = GlaHead {
                steps,
                key_dim: DIM,
                value_dim: DIM,
                q: &self.q[h * per_head..(h + 1) * per_head],
                k: &self.k[h * per_head..(h + 1) * per_head],
                v: &self.v[h * per_head..(h + 1) * per_head],
                log_gate: &self.log_gate[h * steps..(h + 1) * steps],
            };
            exact.extend(gla_recurrent(&head, scale, false));
            magnitude.extend(gla_recurrent(&head, scale, true));
        }
        (exact, magnitude)
    }
}

/// The bound of the module doc relative to `o_abs`, for `steps` steps and
/// chunks of `chunk`.
pub fn relative_bound(steps: usize, chunk: usize) -> f64 {
    let chunk = chunk as f64;
    let gate = f64::from(GATE_MAX);
    let decay_error = (2.0 * chunk * chunk * gate + chunk * gate + 2.0) * U;
    (steps as f64 + 4.0 * chunk + 160.0) * U + 3.0 * decay_error
}
