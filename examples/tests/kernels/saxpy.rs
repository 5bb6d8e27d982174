use phobos_examples::kernels::saxpy;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use proptest::prelude::*;

proptest! {
    #![proptest_config(crate::cases(24))]

    /// One f32 multiply and one f32 add on both sides: bit-for-bit equal.
    #[test]
    fn saxpy_matches_exactly(len in 1usize..10_000, config in 0..saxpy::CONFIGS.len(), seed: u64, alpha in -4.0f32..4.0) {
        let mut rng = SplitMix64::new(seed);
        let (xs, ys) = (rng.vec(len, -1.0, 1.0), rng.vec(len, -1.0, 1.0));
        let device = crate::host();
        let x = device.tensor_from(&xs, [len]).unwrap();
        let y = device.tensor_from(&ys, [len]).unwrap();
        let mut out = device.full([len], f32::NAN).unwrap();
        saxpy::launch_with(&device, &saxpy::CONFIGS[config], &x, &y, &mut out, alpha).unwrap();
        prop_assert_eq!(out.to_vec().unwrap(), reference::saxpy::saxpy(alpha, &xs, &ys));
    }
}
