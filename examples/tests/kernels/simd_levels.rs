//! The launch body of every SIMD level (`phobos::__private::host::simd`:
//! AVX-512, AVX2, portable) gives the same output bits for every config:
//! the levels differ only in vector width, never in float results. Levels
//! above what this CPU has are skipped (the cap never raises the level).

use phobos::__private::host::{SimdLevel, simd_level, with_simd_cap};
use phobos::{Device, Tensor};
use phobos_examples::kernels::{flash_attn_f32, gemm_f32, layernorm, rmsnorm, saxpy, softmax};
use phobos_examples::random::SplitMix64;

const LEVELS: [SimdLevel; 3] = [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512];

/// The output bits of `run` at every level this CPU has, checked equal to
/// the portable body's; `Err` names the first level and element that differ.
fn same_bits_at_every_level(
    what: &str,
    run: impl Fn(&Device) -> Tensor<f32>,
) -> Result<(), String> {
    let device = crate::host();
    let bits =
        |t: Tensor<f32>| -> Vec<u32> { t.to_vec().unwrap().iter().map(|v| v.to_bits()).collect() };
    let portable = with_simd_cap(SimdLevel::Portable, || bits(run(&device)));
    for level in LEVELS.into_iter().filter(|&l| l <= simd_level()) {
        let got = with_simd_cap(level, || bits(run(&device)));
        if let Some(i) = got.iter().zip(&portable).position(|(a, b)| a != b) {
            return Err(format!(
                "{what}: {level:?} element {i}: {:e} vs portable {:e}",
                f32::from_bits(got[i]),
                f32::from_bits(portable[i])
            ));
        }
    }
    Ok(())
}

fn random(len: usize, seed: u64) -> Vec<f32> {
    SplitMix64::new(seed).vec(len, -4.0, 4.0)
}

#[test]
fn row_kernels_give_the_same_bits_at_every_level() {
    crate::every_config(softmax::CONFIGS, |i, c| {
        let (rows, cols) = (crate::ragged(c.ROWS, i), crate::ragged(c.BLOCK_C, i + 1));
        let x = random(rows * cols, i as u64);
        same_bits_at_every_level(&format!("softmax {c:?}"), |d| {
            let tx = d.tensor_from(&x, [rows, cols]).unwrap();
            let mut y = d.full([rows, cols], f32::NAN).unwrap();
            softmax::launch_with(d, c, &tx, &mut y).unwrap();
            y
        })
    });
    crate::every_config(rmsnorm::CONFIGS, |i, c| {
        let (rows, cols) = (crate::ragged(c.ROWS, i), crate::ragged(c.BLOCK_C, i));
        let (x, w) = (random(rows * cols, i as u64), random(cols, 99));
        same_bits_at_every_level(&format!("rmsnorm {c:?}"), |d| {
            let tx = d.tensor_from(&x, [rows, cols]).unwrap();
            let tw = d.tensor_from(&w, [cols]).unwrap();
            let mut y = d.full([rows, cols], f32::NAN).unwrap();
            rmsnorm::launch_with(d, c, &tx, &tw, &mut y, 1e-5).unwrap();
            y
        })
    });
    crate::every_config(layernorm::CONFIGS, |i, c| {
        let (rows, cols) = (crate::ragged(c.ROWS, i), crate::ragged(c.BLOCK_C, i));
        let x = random(rows * cols, i as u64);
        let (w, b) = (random(cols, 98), random(cols, 97));
        same_bits_at_every_level(&format!("layernorm {c:?}"), |d| {
            let tx = d.tensor_from(&x, [rows, cols]).unwrap();
            let tw = d.tensor_from(&w, [cols]).unwrap();
            let tb = d.tensor_from(&b, [cols]).unwrap();
            let mut y = d.full([rows, cols], f32::NAN).unwrap();
            layernorm::launch_with(d, c, &tx, &tw, &tb, &mut y, 1e-5).unwrap();
            y
        })
    });
    crate::every_config(saxpy::CONFIGS, |i, c| {
        let len = crate::ragged(c.BLOCK, i);
        let (x, y) = (random(len, i as u64), random(len, 96));
        same_bits_at_every_level(&format!("saxpy {c:?}"), |d| {
            let tx = d.tensor_from(&x, [len]).unwrap();
            let ty = d.tensor_from(&y, [len]).unwrap();
            let mut out = d.full([len], f32::NAN).unwrap();
            saxpy::launch_with(d, c, &tx, &ty, &mut out, -1.75).unwrap();
            out
        })
    });
}

#[test]
fn contractions_give_the_same_bits_at_every_level() {
    // Small shapes with partial tiles in every config: the bodies differ
    // only per element, so size adds nothing but time.
    let (m, n, k) = (37, 45, 29);
    let (a, b, c0) = (random(m * k, 1), random(k * n, 2), random(m * n, 3));
    crate::every_config(gemm_f32::CONFIGS, |_, config| {
        same_bits_at_every_level(&format!("gemm_f32 {config:?}"), |d| {
            let ta = d.tensor_from(&a, [m, k]).unwrap();
            let tb = d.tensor_from(&b, [k, n]).unwrap();
            let mut tc = d.tensor_from(&c0, [m, n]).unwrap();
            gemm_f32::launch_with(d, config, &ta, &tb, &mut tc, 1.25, -0.5).unwrap();
            tc
        })
    });
    let (heads, seq_q, seq_k, dim) = (2, 37, 53, 64);
    let q = random(heads * seq_q * dim, 4);
    let (kk, v) = (
        random(heads * seq_k * dim, 5),
        random(heads * seq_k * dim, 6),
    );
    crate::every_config(flash_attn_f32::CONFIGS, |_, config| {
        same_bits_at_every_level(&format!("flash_attn_f32 {config:?}"), |d| {
            let tq = d.tensor_from(&q, [heads, seq_q, dim]).unwrap();
            let tk = d.tensor_from(&kk, [heads, seq_k, dim]).unwrap();
            let tv = d.tensor_from(&v, [heads, seq_k, dim]).unwrap();
            let mut o = d.full([heads, seq_q, dim], f32::NAN).unwrap();
            flash_attn_f32::launch_with(d, config, &tq, &tk, &tv, &mut o, 0.125).unwrap();
            o
        })
    });
}

#[test]
fn the_generated_bodies_use_the_features_the_runtime_detects() {
    // build-support writes the `#[target_feature]` lists; phobos-rt's
    // `simd_level` checks the CPU for its own lists: they must be equal.
    use phobos::__private::host::simd;
    use phobos_build::back::host as generated;
    assert_eq!(generated::AVX512_FEATURES, simd::AVX512_FEATURES.join(","));
    assert_eq!(generated::AVX2_FEATURES, simd::AVX2_FEATURES.join(","));
}
