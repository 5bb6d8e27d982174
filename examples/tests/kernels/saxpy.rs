//! saxpy against the reference: one f32 multiply and one f32 add on both
//! sides, so bit-for-bit equal. The vector is tiled by BLOCK.

use phobos_examples::kernels::saxpy;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use proptest::prelude::*;

fn check(config: &saxpy::Config, len: usize, seed: u64, alpha: f32) -> Result<(), String> {
    let mut rng = SplitMix64::new(seed);
    let (xs, ys) = (rng.vec(len, -1.0, 1.0), rng.vec(len, -1.0, 1.0));
    let device = crate::host();
    let x = device.tensor_from(&xs, [len]).unwrap();
    let y = device.tensor_from(&ys, [len]).unwrap();
    let mut out = device.full([len], f32::NAN).unwrap();
    saxpy::launch_with(&device, config, &x, &y, &mut out, alpha).unwrap();
    let (got, want) = (
        out.to_vec().unwrap(),
        reference::saxpy::saxpy(alpha, &xs, &ys),
    );
    match got
        .iter()
        .zip(&want)
        .position(|(g, w)| g.to_bits() != w.to_bits())
    {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!("len={len} {config:?}: {} outputs", got.len())),
        Some(i) => Err(format!(
            "len={len} {config:?}: element {i}: got {}, want {}",
            got[i], want[i]
        )),
    }
}

#[test]
fn every_config_on_ragged_shapes() {
    crate::every_config(saxpy::CONFIGS, |i, c| {
        check(c, crate::ragged(c.BLOCK, i), i as u64, -1.75)
    });
}

proptest! {
    #![proptest_config(crate::cases(24))]

    #[test]
    fn saxpy_matches_exactly(len in 1usize..10_000, config in 0..saxpy::CONFIGS.len(), seed: u64, alpha in -4.0f32..4.0) {
        let result = check(&saxpy::CONFIGS[config], len, seed, alpha);
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}
