//! `@host_impl` end to end through `kernel!`: on the host, `launch` and
//! `launch_with` run the named hand-written function (after the launcher
//! has checked every shape), `launch_generated` runs the generated body,
//! and the two agree; errors from either are the launch's `Err`.

use std::sync::atomic::{AtomicUsize, Ordering};

use phobos::host::{with_host_slice, with_host_slice_mut};
use phobos::{Device, Error, Tensor};
use proptest::prelude::*;

/// Calls of [`scale_rows_host`] (tests in this file run on several threads,
/// so each test compares differences it alone causes: see `calls_during`).
static CALLS: AtomicUsize = AtomicUsize::new(0);

/// The hand-written host path of `scale_rows`: the same products, exact in
/// both, so the two paths agree bit for bit.
fn scale_rows_host(
    _device: &Device,
    x: &Tensor<f32>,
    y: &mut Tensor<f32>,
    s: f32,
) -> phobos::Result<()> {
    CALLS.fetch_add(1, Ordering::SeqCst);
    if s.is_nan() {
        return Err(Error::Backend {
            backend: "host",
            message: "scale_rows_host refuses a NaN scale".into(),
        });
    }
    let scaled = with_host_slice(x, |x| x.iter().map(|v| v * s).collect::<Vec<f32>>())?;
    with_host_slice_mut(y, |y| y.copy_from_slice(&scaled))
}

phobos::kernel! {
    @host_impl(scale_rows_host)
    @autotune(BC in [8, 16])
    @grid(R)
    kernel scale_rows(X: tensor<f32>[R, C], Y: tensor<f32>[R, C], s: f32) {
      let r = program_id(0)
      for c in range(0, C, BC) {
        Y[r, c :+ BC] = X[r, c :+ BC] * s
      }
    }
}

fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 1000.0 - 10.0
        })
        .collect()
}

fn bits(t: &Tensor<f32>) -> Vec<u32> {
    t.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn the_definition_names_the_host_function() {
    assert_eq!(scale_rows::KERNEL.host_impl, Some("scale_rows_host"));
}

#[test]
fn launch_runs_the_hand_written_function_and_launch_generated_the_body() {
    let device = Device::host();
    let (r, c) = (3, 21);
    let x = device.tensor_from(&values(1, r * c), [r, c]).unwrap();
    let mut hand = device.zeros::<f32>([r, c]).unwrap();
    let mut generated = device.zeros::<f32>([r, c]).unwrap();
    let before = CALLS.load(Ordering::SeqCst);
    scale_rows::launch(&device, &x, &mut hand, 1.5).unwrap();
    assert!(
        CALLS.load(Ordering::SeqCst) > before,
        "launch ran the hand-written path"
    );
    scale_rows::launch_generated(
        &device,
        &scale_rows::Config::default(),
        &x,
        &mut generated,
        1.5,
    )
    .unwrap();
    assert_eq!(bits(&hand), bits(&generated));
    let expected: Vec<u32> = values(1, r * c)
        .iter()
        .map(|v| (v * 1.5).to_bits())
        .collect();
    assert_eq!(bits(&generated), expected);
}

#[test]
fn shapes_are_checked_before_the_hand_written_function_runs() {
    let device = Device::host();
    let x = device.tensor_from(&values(2, 12), [3, 4]).unwrap();
    let mut y = device.zeros::<f32>([3, 5]).unwrap();
    let err = scale_rows::launch(&device, &x, &mut y, 2.0).unwrap_err();
    assert!(matches!(err, Error::DimMismatch { .. }), "{err}");
    let mut y1 = device.zeros::<f32>([12]).unwrap();
    let err = scale_rows::launch(&device, &x, &mut y1, 2.0).unwrap_err();
    assert!(matches!(err, Error::RankMismatch { .. }), "{err}");
}

#[test]
fn an_error_of_the_hand_written_function_is_the_launchs() {
    let device = Device::host();
    let x = device.tensor_from(&values(3, 8), [2, 4]).unwrap();
    let mut y = device.zeros::<f32>([2, 4]).unwrap();
    let err = scale_rows::launch(&device, &x, &mut y, f32::NAN).unwrap_err();
    assert!(err.to_string().contains("refuses a NaN scale"), "{err}");
    // The generated body has no such rule: NaN times x is NaN.
    scale_rows::launch_generated(
        &device,
        &scale_rows::Config::default(),
        &x,
        &mut y,
        f32::NAN,
    )
    .unwrap();
    assert!(y.to_vec().unwrap().iter().all(|v| v.is_nan()));
}

#[test]
fn views_sharing_an_allocation_go_through_copies() {
    // The output is a view of a larger tensor, so the hand-written path's
    // slice is a copy stored back; the rest of the allocation is untouched.
    let device = Device::host();
    let x = device.tensor_from(&values(4, 6), [2, 3]).unwrap();
    let big = device.tensor_from(&[7f32; 12], [12]).unwrap();
    let mut y = big.strided([2, 3], &[6, 1], 1).unwrap();
    scale_rows::launch(&device, &x, &mut y, -1.0).unwrap();
    let all = big.to_vec().unwrap();
    let want_row = |row: usize| -> Vec<f32> {
        values(4, 6)[row * 3..row * 3 + 3]
            .iter()
            .map(|v| -v)
            .collect()
    };
    assert_eq!(all[0], 7.0);
    assert_eq!(&all[1..4], &want_row(0)[..]);
    assert_eq!(&all[4..7], &[7.0; 3]);
    assert_eq!(&all[7..10], &want_row(1)[..]);
    assert_eq!(&all[10..], &[7.0; 2]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn both_paths_agree_on_ragged_shapes(r in 1usize..6, c in 1usize..40, seed in any::<u64>(), config in 0usize..2) {
        let device = Device::host();
        let x = device.tensor_from(&values(seed, r * c), [r, c]).unwrap();
        let mut hand = device.zeros::<f32>([r, c]).unwrap();
        let mut generated = device.zeros::<f32>([r, c]).unwrap();
        let config = scale_rows::CONFIGS[config];
        scale_rows::launch_with(&device, &config, &x, &mut hand, 0.75).unwrap();
        scale_rows::launch_generated(&device, &config, &x, &mut generated, 0.75).unwrap();
        prop_assert_eq!(bits(&hand), bits(&generated));
    }
}
