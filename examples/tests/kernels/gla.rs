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

use phobos_examples::check::{F32_UNIT_ROUNDOFF, first_mismatch, to_f64};
use phobos_examples::kernels::gla_chunk;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference::gla::{GlaHead, gla_recurrent};
use proptest::prelude::*;

const DIM: usize = 64;
const U: f64 = F32_UNIT_ROUNDOFF;
const GATE_MAX: f32 = 0.3;

proptest! {
    #![proptest_config(crate::cases(10))]

    #[test]
    fn gla_chunk_matches_recurrence(heads in 1usize..3, steps in 1usize..160, config in 0..gla_chunk::CONFIGS.len(), seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let q = rng.vec(heads * steps * DIM, -1.0, 1.0);
        let k = rng.vec(heads * steps * DIM, -1.0, 1.0);
        let v = rng.vec(heads * steps * DIM, -1.0, 1.0);
        let g = rng.vec(heads * steps, -GATE_MAX, 0.0);
        let scale = 0.125f32;
        let device = crate::host();
        let shape = [heads, steps, DIM];
        let (tq, tk, tv) = (
            device.tensor_from(&q, shape).unwrap(),
            device.tensor_from(&k, shape).unwrap(),
            device.tensor_from(&v, shape).unwrap(),
        );
        let tg = device.tensor_from(&g, [heads, steps, 1]).unwrap();
        let mut to = device.full(shape, f32::NAN).unwrap();
        let chosen = gla_chunk::CONFIGS[config];
        gla_chunk::launch_with(&device, &chosen, &tq, &tk, &tv, &tg, &mut to, scale).unwrap();

        let per_head = steps * DIM;
        let mut want = Vec::new();
        let mut magnitude = Vec::new();
        for h in 0..heads {
            let head = GlaHead {
                steps, key_dim: DIM, value_dim: DIM,
                q: &q[h * per_head..(h + 1) * per_head],
                k: &k[h * per_head..(h + 1) * per_head],
                v: &v[h * per_head..(h + 1) * per_head],
                log_gate: &g[h * steps..(h + 1) * steps],
            };
            want.extend(gla_recurrent(&head, scale, false));
            magnitude.extend(gla_recurrent(&head, scale, true));
        }
        let chunk = chosen.CHUNK as f64;
        let decay_error = (2.0 * chunk * chunk * f64::from(GATE_MAX) + chunk * f64::from(GATE_MAX) + 2.0) * U;
        let relative = (steps as f64 + 4.0 * chunk + 160.0) * U + 3.0 * decay_error;
        let mismatch = first_mismatch(&to_f64(&to.to_vec().unwrap()), &want, |i| relative * magnitude[i]);
        prop_assert!(mismatch.is_none(), "H={} T={} {:?}: {}", heads, steps, chosen, mismatch.unwrap_or_default());
    }
}
