//! The chunked GLA kernel against the step-by-step recurrence, under the
//! bound of `phobos_examples::bounds::gla` (derived there) at the chosen
//! config's CHUNK.

use phobos_examples::bounds::gla::{DIM, GlaInputs, relative_bound};
use phobos_examples::check::{first_mismatch, to_f64};
use phobos_examples::kernels::gla_chunk;
use phobos_examples::random::SplitMix64;
use proptest::prelude::*;

proptest! {
    #![proptest_config(crate::cases(10))]

    #[test]
    fn gla_chunk_matches_recurrence(heads in 1usize..3, steps in 1usize..160, config in 0..gla_chunk::CONFIGS.len(), seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let inputs = GlaInputs::random(&mut rng, heads, steps);
        let scale = 0.125f32;
        let device = crate::host();
        let shape = [heads, steps, DIM];
        let (tq, tk, tv) = (
            device.tensor_from(&inputs.q, shape).unwrap(),
            device.tensor_from(&inputs.k, shape).unwrap(),
            device.tensor_from(&inputs.v, shape).unwrap(),
        );
        let tg = device.tensor_from(&inputs.log_gate, [heads, steps, 1]).unwrap();
        let mut to = device.full(shape, f32::NAN).unwrap();
        let chosen = gla_chunk::CONFIGS[config];
        gla_chunk::launch_with(&device, &chosen, &tq, &tk, &tv, &tg, &mut to, scale).unwrap();

        let (want, magnitude) = inputs.reference(heads, steps, scale);
        let relative = relative_bound(steps, chosen.CHUNK as usize);
        let mismatch = first_mismatch(&to_f64(&to.to_vec().unwrap()), &want, |i| relative * magnitude[i]);
        prop_assert!(mismatch.is_none(), "H={} T={} {:?}: {}", heads, steps, chosen, mismatch.unwrap_or_default());
    }
}
