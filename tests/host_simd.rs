//! `PHOBOS_HOST_SIMD` at build time: unset (or `all`), a kernel has a host
//! body per SIMD level and runs at every level the process has; set to one
//! level (`native` resolves to the build machine's), it has that body
//! alone, runs at that level and above it, and refuses a launch below it
//! with an error naming the kernel and both levels. `make test` runs this
//! suite both ways: unset in the workspace pass, `native` in the host-only
//! pass.

use phobos::__private::host::{SimdLevel, simd_level, with_simd_cap};
use phobos::{Device, Error};

phobos::kernel! {
    @grid(cdiv(N, 16))
    kernel scale_add(x: tensor<f32>[N], y: tensor<f32>[N], a: f32) {
        let i = program_id(0) * 16
        y[i :+ 16] = x[i :+ 16] * a + 1.0
    }
}

/// The one level this test binary's kernels were built for, `None` when
/// they have every level (the variable's value when this crate compiled).
fn built_level() -> Option<SimdLevel> {
    match option_env!("PHOBOS_HOST_SIMD").map(str::trim) {
        None | Some("") | Some("all") => None,
        // `native` is the build machine's widest level; the test runs on
        // the machine that built it, with `PHOBOS_SIMD` unset.
        Some("native") => Some(simd_level()),
        Some(name) => Some(SimdLevel::from_name(name).unwrap_or_else(|| {
            panic!("PHOBOS_HOST_SIMD={name:?} built this crate, yet names no level")
        })),
    }
}

#[test]
fn each_level_runs_the_body_it_was_built_with_or_says_why_not() {
    let device = Device::host();
    let n = 64;
    let x_values: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 3.0).collect();
    let want: Vec<f32> = x_values.iter().map(|v| v * 1.5 + 1.0).collect();
    let x = device.tensor_from(&x_values, [n]).unwrap();
    let levels = [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512];
    let mut ran = 0;
    for level in levels.into_iter().filter(|&l| l <= simd_level()) {
        let mut y = device.full([n], f32::NAN).unwrap();
        let result = with_simd_cap(level, || scale_add::launch(&device, &x, &mut y, 1.5));
        // The portable body runs anywhere, so a portable-only build takes
        // every level; a vector body needs its level or a wider one.
        let runs = match built_level() {
            None | Some(SimdLevel::Portable) => true,
            Some(built) => level >= built,
        };
        if runs {
            result.unwrap_or_else(|e| panic!("{level:?}: {e}"));
            assert_eq!(y.to_vec().unwrap(), want, "{level:?}");
            ran += 1;
        } else {
            let built = built_level().map(SimdLevel::name).unwrap_or_default();
            assert_eq!(
                result,
                Err(Error::HostSimdUnavailable {
                    kernel: "scale_add".into(),
                    built,
                    level: level.name(),
                }),
                "{level:?}"
            );
            assert!(
                y.to_vec().unwrap().iter().all(|v| v.is_nan()),
                "nothing ran"
            );
        }
    }
    assert!(ran >= 1, "the process's own level always runs");
}
