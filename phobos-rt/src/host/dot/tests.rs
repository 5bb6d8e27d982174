//! Contractions against a naive triple loop in f64 (exact for the small
//! integers used), and the accumulation types.

use super::*;
use half::{bf16, f16};
use proptest::prelude::*;

fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize, b_transposed: bool) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                let bv = if b_transposed {
                    b[j * k + p]
                } else {
                    b[p * n + j]
                };
                c[i * n + j] += a[i * k + p] * bv;
            }
        }
    }
    c
}

fn ints(len: usize, seed: usize) -> Vec<f64> {
    (0..len)
        .map(|i| ((i * 7 + seed * 13) % 9) as f64 - 4.0)
        .collect()
}

#[test]
fn f16_and_bf16_accumulate_in_f32() {
    // 1 + 2^-11 summed 4 times: f16 accumulation would stall at 1.0.
    let a = Tile::from_vec(
        &[1, 5],
        vec![
            f16::ONE,
            f16::from_f32(2f32.powi(-11)),
            f16::from_f32(2f32.powi(-11)),
            f16::from_f32(2f32.powi(-11)),
            f16::from_f32(2f32.powi(-11)),
        ],
    )
    .unwrap();
    let b = Tile::from_vec(&[5, 1], vec![f16::ONE; 5]).unwrap();
    let c: Tile<f32> = dot(&a, &b).unwrap();
    assert_eq!(c.as_slice(), &[1.0 + 4.0 * 2f32.powi(-11)]);
    let a = Tile::from_vec(&[1, 3], vec![bf16::from_f32(256.0), bf16::ONE, bf16::ONE]).unwrap();
    let b = Tile::from_vec(&[1, 3], vec![bf16::ONE; 3]).unwrap();
    assert_eq!(dot_t(&a, &b).unwrap().as_slice(), &[258.0f32]);
}

#[test]
fn i8_and_u8_accumulate_in_i32() {
    let a = Tile::from_vec(&[1, 4], vec![127i8, 127, -128, -128]).unwrap();
    let b = Tile::from_vec(&[4, 1], vec![127i8, 127, -128, -128]).unwrap();
    let c: Tile<i32> = dot(&a, &b).unwrap();
    assert_eq!(c.as_slice(), &[2 * 127 * 127 + 2 * 128 * 128]);
    let a = Tile::from_vec(&[2, 2], vec![255u8; 4]).unwrap();
    assert_eq!(dot_t(&a, &a).unwrap().as_slice(), &[2 * 255 * 255; 4]);
}

#[test]
fn dot_acc_adds_to_the_accumulator() {
    let a = Tile::from_vec(&[2, 1], vec![1.0f64, 2.0]).unwrap();
    let b = Tile::from_vec(&[1, 2], vec![3.0f64, 4.0]).unwrap();
    let mut acc = Tile::from_vec(&[2, 2], vec![1.0, 1.0, 1.0, 1.0]).unwrap();
    dot_acc(&mut acc, &a, &b).unwrap();
    assert_eq!(acc.as_slice(), &[4.0, 5.0, 7.0, 9.0]);
    dot_t_acc(
        &mut acc,
        &a,
        &Tile::from_vec(&[2, 1], vec![1.0, -1.0]).unwrap(),
    )
    .unwrap();
    assert_eq!(acc.as_slice(), &[5.0, 4.0, 9.0, 7.0]);
}

#[test]
fn shape_errors() {
    let a = Tile::<f32>::zeros(&[2, 3]).unwrap();
    let b = Tile::<f32>::zeros(&[4, 2]).unwrap();
    let err = dot(&a, &b).unwrap_err();
    assert!(err.to_string().contains("[2, 3] and [4, 2]"), "{err}");
    assert!(dot_t(&a, &b).is_err());
    assert!(matches!(
        dot(&Tile::<f32>::zeros(&[3]).unwrap(), &a),
        Err(Error::BadShape { .. })
    ));
    let mut acc = Tile::<f32>::zeros(&[3, 3]).unwrap();
    let ok_b = Tile::<f32>::zeros(&[3, 2]).unwrap();
    assert!(matches!(
        dot_acc(&mut acc, &a, &ok_b),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn empty_contractions() {
    let a = Tile::<f32>::zeros(&[3, 0]).unwrap();
    let b = Tile::<f32>::zeros(&[0, 2]).unwrap();
    assert_eq!(dot(&a, &b).unwrap().as_slice(), &[0.0; 6]);
    let z = Tile::<f32>::zeros(&[0, 4]).unwrap();
    assert!(dot_t(&z, &z).unwrap().is_empty());
}

fn check<T: DotElement>(m: usize, k: usize, n: usize, from: fn(f64) -> T, to: fn(T::Acc) -> f64) {
    let av: Vec<T> = ints(m * k, 1).into_iter().map(from).collect();
    let bv: Vec<T> = ints(k * n, 2).into_iter().map(from).collect();
    let af: Vec<f64> = av.iter().map(|x| x.to_f64()).collect();
    let bf: Vec<f64> = bv.iter().map(|x| x.to_f64()).collect();
    let a = Tile::from_vec(&[m, k], av).unwrap();
    let b = Tile::from_vec(&[k, n], bv.clone()).unwrap();
    let got: Vec<f64> = dot(&a, &b)
        .unwrap()
        .as_slice()
        .iter()
        .map(|&x| to(x))
        .collect();
    assert_eq!(
        got,
        naive(&af, &bf, m, k, n, false),
        "dot {m}x{k}x{n} {:?}",
        T::DTYPE
    );
    // The same B stored transposed.
    let bt: Vec<T> = (0..n * k).map(|i| bv[(i % k) * n + i / k]).collect();
    let btf: Vec<f64> = bt.iter().map(|x| x.to_f64()).collect();
    let b_t = Tile::from_vec(&[n, k], bt).unwrap();
    let got_t: Vec<f64> = dot_t(&a, &b_t)
        .unwrap()
        .as_slice()
        .iter()
        .map(|&x| to(x))
        .collect();
    assert_eq!(
        got_t,
        naive(&af, &btf, m, k, n, true),
        "dot_t {m}x{k}x{n} {:?}",
        T::DTYPE
    );
}

proptest! {
    // Ragged sizes around the f32 kernel's 6x16 register block.
    #[test]
    fn every_accumulator_matches_naive(m in 0usize..20, k in 0usize..12, n in 0usize..40) {
        check::<f32>(m, k, n, |x| x as f32, f64::from);
        check::<f16>(m, k, n, f16::from_f64, f64::from);
        check::<bf16>(m, k, n, bf16::from_f64, f64::from);
        check::<f64>(m, k, n, |x| x, |x| x);
        check::<i8>(m, k, n, |x| x as i8, f64::from);
        check::<u8>(m, k, n, |x| (x + 4.0) as u8, f64::from);
        check::<i32>(m, k, n, |x| x as i32, f64::from);
        check::<u32>(m, k, n, |x| (x + 4.0) as u32, f64::from);
        check::<i64>(m, k, n, |x| x as i64, |x| x as f64);
    }
}

/// `matrixmultiply::sgemm` as the outside reference for f32 contraction on
/// random data. Both sum in different orders, so the bound is the standard
/// one for a k-term dot product: `|error| <= 2 k eps sum_p |a_ip b_pj|`.
fn sgemm_reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    // SAFETY: a, b and c hold m*k, k*n and m*n elements, row-major.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
    c
}

proptest! {
    #[test]
    fn f32_dot_matches_matrixmultiply(
        (m, k, n, a, b) in (1usize..40, 1usize..70, 1usize..40).prop_flat_map(|(m, k, n)| (
            Just(m), Just(k), Just(n),
            prop::collection::vec(-1.0f32..1.0, m * k),
            prop::collection::vec(-1.0f32..1.0, k * n),
        ))
    ) {
        let want = sgemm_reference(&a, &b, m, k, n);
        let got = dot(&Tile::from_vec(&[m, k], a.clone()).unwrap(), &Tile::from_vec(&[k, n], b.clone()).unwrap()).unwrap();
        for i in 0..m {
            for j in 0..n {
                let magnitude: f32 = (0..k).map(|p| (a[i * k + p] * b[p * n + j]).abs()).sum();
                let bound = 2.0 * k as f32 * f32::EPSILON * magnitude;
                let diff = (got.as_slice()[i * n + j] - want[i * n + j]).abs();
                prop_assert!(diff <= bound, "[{i},{j}] {diff} > {bound}");
            }
        }
    }
}

/// The slice widening (F16C and friends when present) equals the
/// per-element conversion on every 16-bit pattern (NaN stays NaN).
#[test]
fn half_slice_widening_equals_the_scalar_conversion() {
    fn check<T: DotElement<Acc = f32>>(values: &[T]) {
        let widened = widen(values);
        assert_eq!(widened.len(), values.len());
        for (&v, &w) in values.iter().zip(widened.iter()) {
            let want = v.widen();
            assert!(
                w.to_bits() == want.to_bits() || (w.is_nan() && want.is_nan()),
                "{want} widened to {w}"
            );
        }
    }
    check(&(0..=u16::MAX).map(f16::from_bits).collect::<Vec<_>>());
    check(&(0..=u16::MAX).map(bf16::from_bits).collect::<Vec<_>>());
}
