//! The typed launcher's argument checks: every mismatch is an `Err` that
//! names what disagrees, never a panic, and nothing runs.

use phobos::Error;
use phobos_examples::kernels::{flash_attn_f32, gemm_f32, saxpy};

#[test]
fn dim_mismatch_names_the_dim_and_both_extents() {
    let device = crate::host();
    let a = device.zeros::<f32>([4, 3]).unwrap();
    let b = device.zeros::<f32>([5, 6]).unwrap(); // K is 3 in A but 5 in B
    let mut c = device.full([4, 6], 7.0f32).unwrap();
    let err = gemm_f32::launch(&device, &a, &b, &mut c, 1.0, 0.0).unwrap_err();
    assert_eq!(
        err,
        Error::DimMismatch {
            kernel: "gemm_f32".into(),
            dim: "K".into(),
            first_param: "A".into(),
            first_extent: 3,
            second_param: "B".into(),
            second_extent: 5,
        }
    );
    let message = err.to_string();
    assert!(
        message.contains("`K`") && message.contains('3') && message.contains('5'),
        "{message}"
    );
    assert_eq!(
        c.to_vec().unwrap(),
        vec![7.0; 24],
        "nothing may run after a failed check"
    );
}

#[test]
fn rank_mismatch_names_the_parameter_and_both_ranks() {
    let device = crate::host();
    let x = device.zeros::<f32>([8]).unwrap();
    let y = device.zeros::<f32>([2, 4]).unwrap();
    let mut out = device.zeros::<f32>([8]).unwrap();
    let err = saxpy::launch(&device, &x, &y, &mut out, 1.0).unwrap_err();
    assert_eq!(
        err,
        Error::RankMismatch {
            kernel: "saxpy".into(),
            param: "y".into(),
            expected: 1,
            actual: 2
        }
    );
}

#[test]
fn literal_dim_mismatch_shows_declared_and_actual_shapes() {
    let device = crate::host();
    let q = device.zeros::<f32>([1, 4, 32]).unwrap(); // head dim must be 64
    let k = device.zeros::<f32>([1, 4, 64]).unwrap();
    let v = device.zeros::<f32>([1, 4, 64]).unwrap();
    let mut o = device.zeros::<f32>([1, 4, 64]).unwrap();
    let err = flash_attn_f32::launch(&device, &q, &k, &v, &mut o, 1.0).unwrap_err();
    match &err {
        Error::ShapeMismatch {
            lhs, rhs, expected, ..
        } => {
            assert_eq!(lhs, &vec![1, 4, 64]);
            assert_eq!(rhs, &vec![1, 4, 32]);
            assert_eq!(*expected, "tensor<f32>[H, S, 64]");
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    assert!(err.to_string().contains("`Q`"), "{err}");
}

#[test]
fn configs_outside_the_tune_space_are_rejected() {
    let device = crate::host();
    let x = device.zeros::<f32>([8]).unwrap();
    let y = device.zeros::<f32>([8]).unwrap();
    let mut out = device.zeros::<f32>([8]).unwrap();
    let bad = saxpy::Config { BLOCK: 0 };
    let err = saxpy::launch_with(&device, &bad, &x, &y, &mut out, 1.0).unwrap_err();
    assert!(err.to_string().contains("not in the tune space"), "{err}");
}

#[test]
fn tune_space_is_data_with_the_default_first() {
    assert_eq!(saxpy::CONFIGS.first(), Some(&saxpy::Config::default()));
    let blocks: Vec<i64> = saxpy::Config::all().iter().map(|c| c.BLOCK).collect();
    assert_eq!(blocks, [256, 512, 1024, 2048, 4096]);
    assert_eq!(gemm_f32::CONFIGS.len(), 4 * 4 * 6);
    assert_eq!(saxpy::KERNEL.name, "saxpy");
    assert_eq!(saxpy::KERNEL.dims, ["N"]);
    assert_eq!(saxpy::KERNEL.grid, ["cdiv(N, BLOCK)"]);
    assert_eq!(saxpy::KERNEL.params[2], ("out", "tensor<f32>[N]", true));
    assert_eq!(saxpy::KERNEL.params[0], ("x", "tensor<f32>[N]", false));
}

#[test]
fn empty_tensors_launch_no_programs() {
    let device = crate::host();
    let x = device.zeros::<f32>([0]).unwrap();
    let y = device.zeros::<f32>([0]).unwrap();
    let mut out = device.zeros::<f32>([0]).unwrap();
    saxpy::launch(&device, &x, &y, &mut out, 1.0).unwrap();
    assert!(out.to_vec().unwrap().is_empty());
}
