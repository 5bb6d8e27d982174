//! `launch` through the autotuner: the first launch of a shape bucket times
//! every config on scratch copies (the caller's tensors see exactly one
//! launch), the winner lands in the tune cache, and a second run (a new
//! tuner on the same cache, as a new process would have) does no timing.

use phobos::tune::{Plan, Store, TuneMode, Tuner};
use phobos_examples::bounds::gemm::{f32_bounds, f32_inputs};
use phobos_examples::check::{first_mismatch, to_f64};
use phobos_examples::kernels::gemm_f32;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference::gemm::gemm;
use std::time::Duration;

fn tuner(dir: &std::path::Path) -> Tuner {
    Tuner::new(TuneMode::On, Some(Store::new(dir))).with_plan(Plan {
        rounds: 3,
        keep_within: 3.0,
        finalists: 4,
        budget: Duration::from_secs(10),
        min_rounds: 3,
    })
}

/// `C = A B + C` once, through `launch_tuned`; checked against the reference.
fn launch_and_check(tuner: &Tuner, (m, n, k): (usize, usize, usize), seed: u64) {
    let mut rng = SplitMix64::new(seed);
    let (a, b, c) = f32_inputs(&mut rng, m, n, k);
    let device = crate::host();
    let ta = device.tensor_from(&a, [m, k]).unwrap();
    let tb = device.tensor_from(&b, [k, n]).unwrap();
    let mut tc = device.tensor_from(&c, [m, n]).unwrap();
    gemm_f32::launch_tuned(tuner, &device, &ta, &tb, &mut tc, 1.0, 1.0).unwrap();
    // beta = 1: had a tuning run touched `tc`, C would hold A B added twice.
    let want = to_f64(&gemm(m, n, k, &a, &b, &c, 1.0, 1.0));
    let bounds = f32_bounds((m, n, k), &a, &b, &c, 1.0, 1.0, &want);
    let got = to_f64(&tc.to_vec().unwrap());
    assert_eq!(first_mismatch(&got, &want, |i| bounds[i]), None);
}

#[test]
fn a_second_run_of_a_tuned_launch_does_no_timing() {
    let dir = tempfile::tempdir().unwrap();
    let shape = (70, 50, 40);

    let first = tuner(dir.path());
    launch_and_check(&first, shape, 1);
    let stats = first.stats();
    assert_eq!(stats.tuned, 1, "{stats:?}");
    // Every config warmed up once, then the finalists' rounds.
    assert!(stats.timed_runs >= gemm_f32::CONFIGS.len() + 3, "{stats:?}");
    let listing = Store::new(dir.path()).list().unwrap();
    assert_eq!(listing.entries.len(), 1);
    let stored = &listing.entries[0];
    assert_eq!(stored.key.kernel, "gemm_f32");
    assert_eq!(stored.key.bucket, [128, 64, 64], "M, K, N rounded up");
    assert!(gemm_f32::CONFIG_TEXTS.contains(&stored.config.as_str()));

    // The same process again, and a shape in the same bucket: no timing.
    launch_and_check(&first, (100, 60, 33), 2);
    assert_eq!(first.stats().timed_runs, stats.timed_runs);

    // A second run: a new tuner on the same cache reads the winner.
    let second = tuner(dir.path());
    launch_and_check(&second, shape, 3);
    let stats = second.stats();
    assert_eq!(
        (stats.cache_hits, stats.tuned, stats.timed_runs),
        (1, 0, 0),
        "{stats:?}"
    );
    let device = crate::host();
    let a = device.zeros::<f32>([shape.0, shape.2]).unwrap();
    let b = device.zeros::<f32>([shape.2, shape.1]).unwrap();
    let c = device.zeros::<f32>([shape.0, shape.1]).unwrap();
    let chosen = gemm_f32::select_config(&second, &device, &a, &b, &c, 1.0, 0.0).unwrap();
    let index = gemm_f32::CONFIGS.iter().position(|x| *x == chosen).unwrap();
    assert_eq!(gemm_f32::CONFIG_TEXTS[index], stored.config);
}

#[test]
fn tuning_off_runs_the_default_config_without_timing() {
    let device = crate::host();
    let tuner = Tuner::new(TuneMode::Off, None);
    let a = device.zeros::<f32>([8, 8]).unwrap();
    let chosen = gemm_f32::select_config(&tuner, &device, &a, &a, &a, 1.0, 0.0).unwrap();
    assert_eq!(chosen, gemm_f32::Config::default());
    assert_eq!(tuner.stats().timed_runs, 0);
}
