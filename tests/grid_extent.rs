//! A launch never runs fewer programs than its `@grid` asks for in silence:
//! an extent that evaluates negative (here by subtraction, and by `i32`
//! overflow) is an `Err` naming the kernel, the axis and the value, and no
//! program runs.

use phobos::{Device, Error};

phobos::kernel! {
    @grid(N - 4)
    kernel shrink(x: tensor<f32>[N]) {
        x[program_id(0)] = 1.0
    }

    @grid(1, N * N)
    kernel square(x: tensor<f32>[N]) {
        x[program_id(1)] = 1.0
    }
}

#[test]
fn a_negative_grid_extent_is_an_error_naming_axis_and_value() {
    let device = Device::host();
    let mut x = device.zeros::<f32>([2]).unwrap();
    let err = shrink::launch(&device, &mut x).unwrap_err();
    assert_eq!(
        err,
        Error::GridExtent {
            kernel: "shrink".into(),
            axis: 0,
            value: -2
        }
    );
    assert!(
        err.to_string().contains("grid axis 0 evaluates to -2"),
        "{err}"
    );
    assert_eq!(x.to_vec().unwrap(), [0.0; 2], "no program ran");
}

#[test]
fn an_extent_that_overflows_i32_is_an_error_on_its_axis() {
    let device = Device::host();
    // 50_000^2 wraps to a negative i32 (grid expressions are i32).
    let n = 50_000usize;
    let mut x = device.zeros::<f32>([n]).unwrap();
    let err = square::launch(&device, &mut x).unwrap_err();
    let wrapped = i64::from(50_000i32.wrapping_mul(50_000));
    assert!(wrapped < 0);
    assert_eq!(
        err,
        Error::GridExtent {
            kernel: "square".into(),
            axis: 1,
            value: wrapped
        }
    );
}

#[test]
fn zero_and_positive_extents_still_run() {
    let device = Device::host();
    let mut x = device.zeros::<f32>([4]).unwrap();
    shrink::launch(&device, &mut x).unwrap();
    assert_eq!(x.to_vec().unwrap(), [0.0; 4], "N - 4 = 0 programs");
    let mut x = device.zeros::<f32>([6]).unwrap();
    shrink::launch(&device, &mut x).unwrap();
    assert_eq!(x.to_vec().unwrap(), [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
}
