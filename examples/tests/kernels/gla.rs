//! The chunked GLA kernel against the step-by-step recurrence, under the
//! bound of `phobos_examples::bounds::gla` (derived there) at the chosen
//! config's CHUNK. Steps are tiled by CHUNK; the dimension is fixed (64).

use phobos_examples::bounds::gla::{DIM, GlaInputs, relative_bound};
use phobos_examples::check::{first_mismatch, to_f64};
use phobos_examples::kernels::gla_chunk;
use phobos_examples::random::SplitMix64;
use proptest::prelude::*;

fn check(config: &gla_chunk::Config, heads: usize, steps: usize, seed: u64) -> Result<(), String> {
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
    let tg = device
        .tensor_from(&inputs.log_gate, [heads, steps, 1])
        .unwrap();
    let mut to = device.full(shape, f32::NAN).unwrap();
    gla_chunk::launch_with(&device, config, &tq, &tk, &tv, &tg, &mut to, scale).unwrap();

    let (want, magnitude) = inputs.reference(heads, steps, scale);
    let relative = relative_bound(steps, config.CHUNK as usize);
    match first_mismatch(&to_f64(&to.to_vec().unwrap()), &want, |i| {
        relative * magnitude[i]
    }) {
        None => Ok(()),
        Some(why) => Err(format!("H={heads} T={steps} {config:?}: {why}")),
    }
}

#[test]
fn every_config_on_ragged_shapes() {
    crate::every_config(gla_chunk::CONFIGS, |i, c| {
        check(c, 2, crate::ragged(c.CHUNK, i), i as u64)
    });
}

proptest! {
    #![proptest_config(crate::cases(10))]

    #[test]
    fn matches_recurrence(heads in 1usize..3, steps in 1usize..160, config in 0..gla_chunk::CONFIGS.len(), seed: u64) {
        let result = check(&gla_chunk::CONFIGS[config], heads, steps, seed);
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}
